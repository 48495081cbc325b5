package hookentry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/allowlist"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// Entry is our PreToolUse hook group as it must stand in settings.json, and what else the file
// may keep.
type Entry struct {
	Mode    managedconfig.Mode
	Command string
	Timeout int // seconds, as Claude Code counts them
	// Allowed is the allow-list the rest of the file is held to.
	Allowed allowlist.List
}

// NewEntry builds the entry for a configuration. hostChannel is the session's host channel
// bridge folder, baked into the command; "" for none.
func NewEntry(cfg managedconfig.Config, hostChannel string) (Entry, error) {
	p := paramsFrom(cfg)
	p.HostChannel = hostChannel
	s, err := Script(p)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Mode: cfg.Mode, Command: s, Timeout: int(cfg.HookTimeout / time.Second),
		Allowed: allowlist.New(cfg.AllowedSettings)}, nil
}

// group renders the entry as the PreToolUse group Claude Code reads.
func (e Entry) group() json.RawMessage {
	return marshal(claudehook.CommandGroup(e.Command, time.Duration(e.Timeout)*time.Second))
}

// marshal encodes without HTML escaping, so the script reads as written ("2>/dev/null", not
// "2\u003e/dev/null") for an admin looking at settings.json.
func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings, ints and raw messages already validated: cannot fail
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// array joins raw values into a JSON list, leaving each value's bytes as they were.
func array(items []json.RawMessage) json.RawMessage {
	b := []byte{'['}
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, ']')
}

// MergeResult says what Merge found and changed.
type MergeResult struct {
	// Changed is false when the input already carried exactly our current entry; the caller then
	// writes nothing.
	Changed bool
	// Added: no entry of ours at all was present.
	Added bool
	// Removed counts stale or duplicate entries of ours that were dropped.
	Removed int
	// DisabledAllHooks: disableAllHooks was set and has been removed.
	DisabledAllHooks bool
	// EnvRemoved names env keys removed because they would let the session choose what hooks run.
	EnvRemoved []string
	// Held names everything the allow-list kept out of the file ("statusLine", "hooks.Stop",
	// "env.CLAUDE_CODE_SIMPLE"); the caller keeps the original aside. Attempts is the part of it
	// that can start a program or switch hooks off.
	Held, Attempts []string
	// Damaged names parts of the file that were not what the schema allows and were replaced;
	// the caller keeps a copy of the original.
	Damaged []string
}

// ErrNotObject is returned for input that is not a JSON object at all.
var ErrNotObject = errors.New("settings.json is not a JSON object")

// Merge puts our entry into the settings in data and holds the rest to the entry's allow-list.
// Every key, env variable, hook event and PreToolUse group the list passes is kept, with its
// values byte for byte (only whitespace is re-indented); the others are taken out and named in
// the result; our stale and duplicate entries are dropped. Empty input counts as {}.
func Merge(data []byte, e Entry) ([]byte, MergeResult, error) {
	var res MergeResult
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	top, err := parseObject(data)
	if err != nil {
		return nil, res, fmt.Errorf("%w: %v", ErrNotObject, err)
	}
	h := hold(top, e.Allowed)
	hooks := &object{}
	if v, ok := top.get("hooks"); ok {
		if hooks, err = parseObject(v); err != nil {
			hooks = &object{}
			res.Damaged = append(res.Damaged, "hooks")
		}
	}
	var groups []json.RawMessage
	if v, ok := hooks.get("PreToolUse"); ok {
		if err := json.Unmarshal(v, &groups); err != nil {
			groups = nil
			res.Damaged = append(res.Damaged, "hooks.PreToolUse")
		}
	}
	foreign, current := filterGroups(groups, e, &res)
	kept := holdForeignPreToolUse(foreign, e.Allowed, &h)
	res.note(h)
	if current && len(res.Held) == 0 && res.Removed == 0 && len(res.Damaged) == 0 {
		return data, res, nil
	}
	kept = append(kept, e.group())
	res.Changed = true
	hooks.set("PreToolUse", array(kept))
	top.set("hooks", hooks.encode())
	out, err := indent(top.encode())
	return out, res, err
}

// note records what hold took out.
func (res *MergeResult) note(h held) {
	res.Held, res.Attempts = h.names, h.attempts
	for _, n := range h.names {
		switch {
		case n == "disableAllHooks":
			res.DisabledAllHooks = true
		case strings.HasPrefix(n, "env.") && allowlist.Dangerous(n):
			res.EnvRemoved = append(res.EnvRemoved, strings.TrimPrefix(n, "env."))
		}
	}
}

// filterGroups drops every hook of ours, and reports whether one copy of the current group was
// among them; it returns the groups (or what is left of them) that are not ours. Our group then
// goes last, after whatever the allow-list lets stand.
func filterGroups(groups []json.RawMessage, e Entry, res *MergeResult) ([]json.RawMessage, bool) {
	want := e.group()
	current := false
	ours := 0
	kept := make([]json.RawMessage, 0, len(groups)+1)
	for _, g := range groups {
		if !current && sameJSON(g, want) {
			current = true
			ours++
			continue
		}
		rest, n := withoutOurs(g)
		ours += n
		res.Removed += n
		if rest != nil {
			kept = append(kept, rest)
		}
	}
	res.Added = ours == 0
	return kept, current
}

// withoutOurs removes our hooks from one group. It returns the group unchanged when it holds none
// of ours, nil when nothing but ours was in it, and the number removed.
func withoutOurs(g json.RawMessage) (json.RawMessage, int) {
	obj, err := parseObject(g)
	if err != nil {
		return g, 0 // not a group we understand: theirs, keep it
	}
	raw, ok := obj.get("hooks")
	var hooks []json.RawMessage
	if !ok || json.Unmarshal(raw, &hooks) != nil {
		return g, 0
	}
	kept := hooks[:0:0]
	for _, h := range hooks {
		if isOurs(h) {
			continue
		}
		kept = append(kept, h)
	}
	removed := len(hooks) - len(kept)
	switch {
	case removed == 0:
		return g, 0
	case len(kept) == 0:
		return nil, removed
	}
	obj.set("hooks", array(kept))
	return obj.encode(), removed
}

func isOurs(h json.RawMessage) bool {
	var c struct {
		Command string `json:"command"`
	}
	return json.Unmarshal(h, &c) == nil && strings.Contains(c.Command, Marker)
}

// sameJSON compares two values ignoring whitespace and key order.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xa, yb)
}

func indent(compact []byte) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Indent(&b, compact, "", "  "); err != nil {
		return nil, fmt.Errorf("format settings: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// object is a JSON object that keeps its keys in order and its values as raw bytes, so that what
// we do not touch comes out as it went in.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

// parseObject reads one JSON object and nothing after it. A repeated key keeps its first place
// and its last value, as JavaScript's JSON.parse (and so Claude Code) reads it.
func parseObject(data []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not an object")
	}
	o := &object{vals: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.set(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		return nil, errors.New("data after the object")
	}
	return o, nil
}

func (o *object) get(k string) (json.RawMessage, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *object) set(k string, v json.RawMessage) {
	if o.vals == nil {
		o.vals = map[string]json.RawMessage{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

func (o *object) encode() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshal(k))
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// Strip removes every entry of ours and nothing else; an event list or hooks object that held only
// ours goes too, so a file we created returns to what it was. It is for switching coworkbridge off:
// an enforce hook left behind would deny every call once the daemon stops vouching for it.
func Strip(data []byte) ([]byte, bool, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return data, false, nil
	}
	top, err := parseObject(data)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrNotObject, err)
	}
	raw, ok := top.get("hooks")
	if !ok {
		return data, false, nil
	}
	hooks, err := parseObject(raw)
	if err != nil {
		return data, false, nil
	}
	var groups []json.RawMessage
	if v, ok := hooks.get("PreToolUse"); !ok || json.Unmarshal(v, &groups) != nil {
		return data, false, nil
	}
	var kept []json.RawMessage
	removed := 0
	for _, g := range groups {
		rest, n := withoutOurs(g)
		removed += n
		if rest != nil {
			kept = append(kept, rest)
		}
	}
	if removed == 0 {
		return data, false, nil
	}
	if len(kept) == 0 {
		hooks.del("PreToolUse")
	} else {
		hooks.set("PreToolUse", array(kept))
	}
	if len(hooks.keys) == 0 {
		top.del("hooks")
	} else {
		top.set("hooks", hooks.encode())
	}
	out, err := indent(top.encode())
	return out, true, err
}

// HookCommand returns the command of our hook entry in a settings.json, "" when there is none:
// for tools that run the hook as Claude Code would (the demo, the benchmarks).
func HookCommand(settings []byte) string {
	for _, c := range claudehook.PreToolUseCommands(settings) {
		if strings.Contains(c, Marker) {
			return c
		}
	}
	return ""
}
