package hookentry

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coworkbridge/coworkbridge/allowlist"
)

// held is what hold took out of one settings object: the names (as allowlist takes them), and
// the subset that only an attempt on the guard explains.
type held struct {
	names    []string
	attempts []string
}

func (h *held) add(name string) {
	h.names = append(h.names, name)
	if allowlist.Dangerous(name) {
		h.attempts = append(h.attempts, name)
	}
}

// hold takes out of a settings object every key the allow-list does not pass, every env variable
// it does not pass, and every hook event but PreToolUse (whose groups Merge judges one by one,
// since ours stands there) unless allowed; what it keeps it keeps byte for byte. A key whose value
// cannot be read member by member goes whole.
func hold(top *object, l allowlist.List) held {
	var h held
	for _, k := range append([]string(nil), top.keys...) {
		v := top.vals[k]
		switch {
		case k == "hooks":
			holdHooks(top, v, l, &h)
		case k == "env":
			holdEnv(top, v, l, &h)
		case k == "mcpServers":
			holdServerDefs(top, k, l, &h)
		case k == "disableAllHooks":
			// false is harmless as it stands; true is held whatever an admin allowed, since it
			// would switch our own hook off.
			if !bytesEqualTrim(v, "false") {
				top.del(k)
				h.add(k)
			}
		case !l.Key(k):
			top.del(k)
			h.add(k)
		}
	}
	return h
}

func holdEnv(top *object, v json.RawMessage, l allowlist.List, h *held) {
	holdMembers(top, "env", l.Env, h)
}

// holdMembers keeps, of the object at top[key], the members allow passes, and reports the others
// as "key.member"; a value that is not an object goes whole.
func holdMembers(top *object, key string, allow func(string) bool, h *held) {
	v, _ := top.get(key)
	members, err := parseObject(v)
	if err != nil {
		top.del(key)
		h.add(key)
		return
	}
	n := len(h.names)
	for _, k := range append([]string(nil), members.keys...) {
		if !allow(k) {
			members.del(k)
			h.add(key + "." + k)
		}
	}
	if len(h.names) > n {
		top.set(key, members.encode())
	}
}

// holdServerDefs keeps, of the MCP server definitions at top[key], those the allow-list names (or
// all, when it passes the key) and whose env hands their program nothing but what the admin named
// for them (allowlist.MCPServerEnv): lockdown's drop-in admits a server by its command, which the
// CLI compares without its env, so an allowed command with the agent's PATH or NODE_OPTIONS would
// run the agent's code.
func holdServerDefs(top *object, key string, l allowlist.List, h *held) {
	v, _ := top.get(key)
	defs, err := parseObject(v)
	if err != nil {
		top.del(key)
		h.add(key)
		return
	}
	n := len(h.names)
	for _, name := range append([]string(nil), defs.keys...) {
		if !l.Key(key) && !l.MCPServer(name) || !serverEnvAllowed(defs.vals[name], name, l) {
			defs.del(name)
			h.add(key + "." + name)
		}
	}
	if len(h.names) > n {
		top.set(key, defs.encode())
	}
}

// serverEnvAllowed reports whether a server definition's env passes: every variable one the
// admin named for the server, none that changes what its command runs. A definition that cannot
// be read member by member does not pass.
func serverEnvAllowed(def json.RawMessage, name string, l allowlist.List) bool {
	var d struct {
		Env map[string]json.RawMessage `json:"env"`
	}
	if json.Unmarshal(def, &d) != nil {
		return false
	}
	for k := range d.Env {
		if !l.MCPServerEnv(name, k) {
			return false
		}
	}
	return true
}

func holdHooks(top *object, v json.RawMessage, l allowlist.List, h *held) {
	hooks, err := parseObject(v)
	if err != nil {
		return // Merge replaces a hooks value it cannot read, and keeps the original aside
	}
	n := len(h.names)
	for _, ev := range append([]string(nil), hooks.keys...) {
		if ev != "PreToolUse" && !l.HookEvent(ev) {
			hooks.del(ev)
			h.add("hooks." + ev)
		}
	}
	if len(h.names) > n {
		top.set("hooks", hooks.encode())
	}
}

// holdForeignPreToolUse keeps, of the PreToolUse groups that are not ours, only what the
// allow-list passes: a foreign hook's updatedInput would change the call after we judged it.
func holdForeignPreToolUse(groups []json.RawMessage, l allowlist.List, h *held) []json.RawMessage {
	if len(groups) == 0 || l.HookEvent("PreToolUse") {
		return groups
	}
	h.add("hooks.PreToolUse")
	return nil
}

// bytesEqualTrim reports whether a raw JSON value is exactly s, whitespace aside.
func bytesEqualTrim(v []byte, s string) bool { return strings.TrimSpace(string(v)) == s }

// Judge names what the allow-list would hold in a settings document, our own entries aside, and
// the part of it that can start a program or switch hooks off: for judging a settings change
// the CLI is about to load (the managed ConfigChange hook), where nothing is written.
func Judge(data []byte, l allowlist.List) (held, attempts []string, err error) {
	top, err := parseObject(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrNotObject, err)
	}
	h := hold(top, l)
	if v, ok := top.get("hooks"); ok {
		if hooks, err := parseObject(v); err == nil {
			var groups []json.RawMessage
			if pre, ok := hooks.get("PreToolUse"); ok && json.Unmarshal(pre, &groups) == nil {
				var foreign []json.RawMessage
				for _, g := range groups {
					if rest, _ := withoutOurs(g); rest != nil {
						foreign = append(foreign, rest)
					}
				}
				holdForeignPreToolUse(foreign, l, &h)
			}
		}
	}
	return h.names, h.attempts, nil
}

// WithoutAttempts is data, a settings document, less only what an attempt on the guard explains
// (the keys and members Judge calls attempts), every other key kept as written: for a settings
// file of a user's own (their project, their home), where keys merely unknown to the safe list
// are theirs to keep. It returns nil when there is nothing to take out.
func WithoutAttempts(data []byte, l allowlist.List) ([]byte, []string, error) {
	_, attempts, err := Judge(data, l)
	if err != nil || len(attempts) == 0 {
		return nil, nil, err
	}
	top, err := parseObject(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrNotObject, err)
	}
	for _, name := range attempts {
		key, member, nested := strings.Cut(name, ".")
		if !nested {
			top.del(key)
			continue
		}
		v, _ := top.get(key)
		members, err := parseObject(v)
		if err != nil {
			top.del(key)
			continue
		}
		members.del(member)
		top.set(key, members.encode())
	}
	out, err := indent(top.encode())
	return out, attempts, err
}

// holdServers takes out of top the MCP servers the allow-list does not name: top.mcpServers, and
// with projects every projects.<path>.mcpServers.
func holdServers(top *object, projects bool, l allowlist.List) held {
	var h held
	if _, ok := top.get("mcpServers"); ok {
		holdServerDefs(top, "mcpServers", l, &h)
	}
	if !projects {
		return h
	}
	v, ok := top.get("projects")
	if !ok {
		return h
	}
	ps, err := parseObject(v)
	if err != nil {
		return h // the CLI reads no local scope from it either
	}
	n := len(h.names)
	for _, path := range ps.keys {
		p, err := parseObject(ps.vals[path])
		if err != nil {
			continue
		}
		if _, ok := p.get("mcpServers"); !ok {
			continue
		}
		m := len(h.names)
		holdServerDefs(p, "mcpServers", l, &h)
		if len(h.names) > m {
			ps.set(path, p.encode())
		}
	}
	if len(h.names) > n {
		top.set("projects", ps.encode())
	}
	return h
}

// HoldServers takes out of data, a settings or state file of the CLI (~/.claude.json's shape
// when projects), the MCP servers the allow-list does not name, and returns what is left,
// indented, with the names held and the subset only an attempt on the guard explains. It fails
// on a file that is not a JSON object, from which the CLI starts no server either.
func HoldServers(data []byte, projects bool, l allowlist.List) (out []byte, held, attempts []string, err error) {
	top, err := parseObject(data)
	if err != nil {
		return nil, nil, nil, err
	}
	h := holdServers(top, projects, l)
	if len(h.names) == 0 {
		return data, nil, nil, nil
	}
	out, err = indent(top.encode())
	return out, h.names, h.attempts, err
}

// HoldProject takes out of data, a project-level settings file where no hook of ours stands,
// what the allow-list does not pass, every PreToolUse group included, and returns what is left,
// indented, with the names held. It fails on a file that is not a JSON object, which the CLI
// ignores.
func HoldProject(data []byte, l allowlist.List) (out []byte, held []string, err error) {
	top, err := parseObject(data)
	if err != nil {
		return nil, nil, err
	}
	h := hold(top, l)
	if v, ok := top.get("hooks"); ok {
		if hooks, err := parseObject(v); err == nil {
			// No hook of ours stands here, so every PreToolUse group is another's.
			var groups []json.RawMessage
			if pre, ok := hooks.get("PreToolUse"); ok && json.Unmarshal(pre, &groups) == nil && len(groups) > 0 {
				if holdForeignPreToolUse(groups, l, &h) == nil {
					hooks.del("PreToolUse")
					top.set("hooks", hooks.encode())
				}
			}
		}
	}
	if len(h.names) == 0 {
		return data, nil, nil
	}
	out, err = indent(top.encode())
	return out, h.names, err
}
