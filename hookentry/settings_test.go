package hookentry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/allowlist"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// The settings schema lives in the project's shared reference folder beside the checkout.
const schemaPath = "../../shared/reference/claude-code-settings.schema.json"

func settingsSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		cbtest.NoShared(t, "the reference settings schema", err)
	}
	return cbtest.ReferenceSchema(t, data)
}

func validate(t testing.TB, s *jsonschema.Schema, data []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("output does not validate against the settings schema: %v\n%s", err, data)
	}
}

func entry(t testing.TB, mode managedconfig.Mode) Entry {
	t.Helper()
	return entryAllowing(t, mode)
}

// entryAllowing is entry with an admin's allowed_settings.
func entryAllowing(t testing.TB, mode managedconfig.Mode, allowed ...string) Entry {
	t.Helper()
	cfg := managedconfig.Config{Mode: mode, HookTimeout: 30 * time.Second, DecisionTimeout: 10 * time.Second, MaxLineBytes: 4 << 20,
		AllowedSettings: allowed}
	e, err := NewEntry(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// staleOurs has every kind of leftover of ours: an old version, a duplicate of the current entry,
// and one of ours sharing a group with someone else's hook.
func staleOurs(t *testing.T) []byte {
	cur := string(entry(t, managedconfig.Observe).group())
	return []byte(`{"hooks":{"PreToolUse":[
	  {"matcher":"*","hooks":[{"type":"command","command":"# coworkbridge-hook v0 mode=enforce\nexit 0","timeout":30}]},
	  ` + cur + `,
	  {"matcher":"Bash","hooks":[{"type":"command","command":"# coworkbridge-hook v0\n"},{"type":"command","command":"theirs.sh"}]},
	  ` + cur + `
	]}}`)
}

func fixtures(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("testdata/settings/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	out := map[string][]byte{"stale-ours": staleOurs(t), "empty-file": nil}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = data
	}
	return out
}

func mustParse(t *testing.T, data []byte) *object {
	t.Helper()
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	o, err := parseObject(data)
	if err != nil {
		t.Fatalf("parse %q: %v", data, err)
	}
	return o
}

// foreignHooks lists every hook that is not ours, per event, in order.
func foreignHooks(t *testing.T, settings *object) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	raw, ok := settings.get("hooks")
	if !ok {
		return out
	}
	hooks, err := parseObject(raw)
	if err != nil {
		return out
	}
	for _, event := range hooks.keys {
		var groups []struct {
			Matcher string            `json:"matcher"`
			Hooks   []json.RawMessage `json:"hooks"`
		}
		json.Unmarshal(hooks.vals[event], &groups)
		for _, g := range groups {
			for _, h := range g.Hooks {
				if !isOurs(h) {
					var c bytes.Buffer
					json.Compact(&c, h)
					out[event] = append(out[event], g.Matcher+" "+c.String())
				}
			}
		}
	}
	return out
}

// ourGroups returns the PreToolUse groups that contain a hook of ours.
func ourGroups(t *testing.T, settings *object) []json.RawMessage {
	t.Helper()
	hooks, err := parseObject(settings.vals["hooks"])
	if err != nil {
		return nil
	}
	var groups []json.RawMessage
	json.Unmarshal(hooks.vals["PreToolUse"], &groups)
	var ours []json.RawMessage
	for _, g := range groups {
		var grp struct {
			Hooks []json.RawMessage `json:"hooks"`
		}
		json.Unmarshal(g, &grp)
		for _, h := range grp.Hooks {
			if isOurs(h) {
				ours = append(ours, g)
				break
			}
		}
	}
	return ours
}

// permissive allows by name every foreign thing the fixtures hold, as an admin can.
var permissive = []string{"hooks", "env", "statusLine"}

func TestMergeKeepsEverythingAnAdminAllowsAndAddsOneEntry(t *testing.T) {
	schema := settingsSchema(t)
	for name, in := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			e := entryAllowing(t, managedconfig.Enforce, permissive...)
			out, res, err := Merge(in, e)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Changed {
				t.Fatal("adding our entry must change the file")
			}
			before, after := mustParse(t, in), mustParse(t, out)
			for _, k := range before.keys {
				if k == "hooks" || (k == "disableAllHooks" && res.DisabledAllHooks) {
					continue
				}
				if !bytes.Equal(compactRaw(t, before.vals[k]), compactRaw(t, after.vals[k])) {
					t.Errorf("key %s changed:\n%s\n%s", k, before.vals[k], after.vals[k])
				}
			}
			if _, ok := after.get("disableAllHooks"); ok && res.DisabledAllHooks {
				t.Error("disableAllHooks: true survived")
			}
			if got, want := foreignHooks(t, after), foreignHooks(t, before); !equalHooks(got, want) {
				t.Errorf("foreign hooks changed:\n got %v\nwant %v", got, want)
			}
			if ours := ourGroups(t, after); len(ours) != 1 || !sameJSON(ours[0], e.group()) {
				t.Errorf("want exactly our current group, got %s", ours)
			}
			validate(t, schema, out)
		})
	}
}

func compactRaw(t *testing.T, raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func equalHooks(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\n") != strings.Join(b[k], "\n") {
			return false
		}
	}
	return true
}

func TestMergeIsIdempotentAndSurvivesModeRoundTrips(t *testing.T) {
	schema := settingsSchema(t)
	obs, enf := entry(t, managedconfig.Observe), entry(t, managedconfig.Enforce)
	for name, in := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			first, _, err := Merge(in, obs)
			if err != nil {
				t.Fatal(err)
			}
			again, res, err := Merge(first, obs)
			if err != nil || res.Changed || !bytes.Equal(again, first) {
				t.Fatalf("second merge changed=%v err=%v: not idempotent", res.Changed, err)
			}
			enforced, res, err := Merge(first, enf)
			if err != nil || !res.Changed || res.Removed != 1 || res.Added {
				t.Fatalf("observe->enforce: %+v %v", res, err)
			}
			validate(t, schema, enforced)
			back, _, err := Merge(enforced, obs)
			if err != nil {
				t.Fatal(err)
			}
			// Our group may now stand last where it stood first; in meaning nothing differs.
			a, b := mustParse(t, first), mustParse(t, back)
			if !equalHooks(foreignHooks(t, a), foreignHooks(t, b)) || len(ourGroups(t, b)) != 1 || !sameJSON(ourGroups(t, b)[0], obs.group()) {
				t.Fatalf("observe->enforce->observe differs from observe:\n%s\n%s", first, back)
			}
			for _, k := range a.keys {
				if k != "hooks" && !bytes.Equal(a.vals[k], b.vals[k]) {
					t.Errorf("key %s differs after the round trip", k)
				}
			}
		})
	}
}

func TestMergeReportsWhatItRepaired(t *testing.T) {
	e := entry(t, managedconfig.Observe)
	tests := []struct {
		name string
		in   string
		want MergeResult
	}{
		{"new", `{}`, MergeResult{Changed: true, Added: true}},
		{"disabled", `{"disableAllHooks":true}`, MergeResult{Changed: true, Added: true, DisabledAllHooks: true}},
		{"stale", string(staleOurs(t)), MergeResult{Changed: true, Removed: 3}},
		{"hooks not an object", `{"hooks":[1,2]}`, MergeResult{Changed: true, Added: true, Damaged: []string{"hooks"}}},
		{"PreToolUse not a list", `{"hooks":{"PreToolUse":{"matcher":"*"}}}`, MergeResult{Changed: true, Added: true, Damaged: []string{"hooks.PreToolUse"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, res, err := Merge([]byte(tt.in), e)
			if err != nil {
				t.Fatal(err)
			}
			if res.Changed != tt.want.Changed || res.Added != tt.want.Added || res.Removed != tt.want.Removed ||
				res.DisabledAllHooks != tt.want.DisabledAllHooks || strings.Join(res.Damaged, ",") != strings.Join(tt.want.Damaged, ",") {
				t.Errorf("got %+v, want %+v", res, tt.want)
			}
		})
	}
}

func TestMergeKeepsNumbersAndTextExactly(t *testing.T) {
	in, _ := os.ReadFile("testdata/settings/large-numbers.json")
	out, _, err := Merge(in, entryAllowing(t, managedconfig.Observe, permissive...))
	if err != nil {
		t.Fatal(err)
	}
	for _, lit := range []string{"12345678901234567890", "0.10000000000000000555", "1E-7", "1e400", "2.50"} {
		if !bytes.Contains(out, []byte(lit)) {
			t.Errorf("number %s was not kept literally:\n%s", lit, out)
		}
	}
	in, _ = os.ReadFile("testdata/settings/unicode.json")
	out, _, _ = Merge(in, entry(t, managedconfig.Observe))
	for _, lit := range []string{`"日本語"`, `"\u2028line sep"`, `"עברית\u202e"`, `"<html>&amp;"`, `"quote\"and\\slash"`} {
		if !bytes.Contains(out, []byte(lit)) {
			t.Errorf("string %s was not kept literally", lit)
		}
	}
	if !bytes.Contains(out, []byte(`2>/dev/null`)) {
		t.Error("our script should read as written, without HTML escapes")
	}
}

func TestMergeRefusesWhatIsNotAnObject(t *testing.T) {
	for _, in := range []string{`[]`, `"x"`, `{"a":1`, `{"a":1} {"b":2}`, `{"a":1}x`, "\x00", `nul`} {
		if _, _, err := Merge([]byte(in), entry(t, managedconfig.Observe)); !errors.Is(err, ErrNotObject) {
			t.Errorf("Merge(%q) = %v, want ErrNotObject", in, err)
		}
	}
}

func FuzzMerge(f *testing.F) {
	for _, file := range []string{"other-hooks", "large-numbers", "unicode", "duplicate-keys", "disable-all-hooks"} {
		data, _ := os.ReadFile("testdata/settings/" + file + ".json")
		f.Add(data)
	}
	f.Add([]byte(`{"hooks":{"PreToolUse":[{"hooks":[{"command":"coworkbridge-hook"}]},7,null]}}`))
	e := entry(f, managedconfig.Enforce)
	f.Fuzz(func(t *testing.T, in []byte) {
		out, res, err := Merge(in, e)
		if err != nil {
			if !errors.Is(err, ErrNotObject) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		again, res2, err := Merge(out, e)
		if err != nil || res2.Changed || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent (first %+v, second %+v, err %v)\nin  %q\nout %q", res, res2, err, in, out)
		}
		after := mustParse(t, out)
		if ours := ourGroups(t, after); len(ours) != 1 || !sameJSON(ours[0], e.group()) {
			t.Fatalf("want exactly our group once in %q", out)
		}
		if v, ok := after.get("disableAllHooks"); ok && bytes.Equal(bytes.TrimSpace(v), []byte("true")) {
			t.Fatal("disableAllHooks: true survived")
		}
	})
}

func TestStripUndoesMergeAndKeepsTheRest(t *testing.T) {
	for name, in := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			merged, _, err := Merge(in, entryAllowing(t, managedconfig.Enforce, permissive...))
			if err != nil {
				t.Fatal(err)
			}
			stripped, changed, err := Strip(merged)
			if err != nil || !changed {
				t.Fatalf("changed=%v err=%v", changed, err)
			}
			after := mustParse(t, stripped)
			if len(ourGroups(t, after)) != 0 {
				t.Errorf("our entry survived: %s", stripped)
			}
			if !equalHooks(foreignHooks(t, after), foreignHooks(t, mustParse(t, in))) {
				t.Errorf("foreign hooks changed: %s", stripped)
			}
			if _, changed, _ := Strip(stripped); changed {
				t.Error("stripping twice changed the file again")
			}
		})
	}
	out, _, _ := Merge([]byte("{}"), entry(t, managedconfig.Observe))
	if back, _, _ := Strip(out); string(back) != "{}\n" {
		t.Errorf("a file we created should strip back to {}, got %q", back)
	}
}

func TestHookCommandFindsOurEntryAmongOthers(t *testing.T) {
	e, err := NewEntry(managedconfig.Config{Mode: managedconfig.Enforce, HookTimeout: 30 * time.Second, DecisionTimeout: 10 * time.Second, MaxLineBytes: 1 << 20}, "")
	if err != nil {
		t.Fatal(err)
	}
	merged, _, err := Merge([]byte(`{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"other-guard"}]}]}}`), e)
	if err != nil {
		t.Fatal(err)
	}
	if got := HookCommand(merged); !strings.HasPrefix(got, fmt.Sprintf("# %s v%d mode=enforce", Marker, ScriptVersion)) {
		t.Errorf("HookCommand = %.60q", got)
	}
	for _, none := range []string{``, `{}`, `not json`, `{"hooks":{"PreToolUse":[{"hooks":[{"command":"other-guard"}]}]}}`} {
		if got := HookCommand([]byte(none)); got != "" {
			t.Errorf("HookCommand(%s) = %q, want nothing", none, got)
		}
	}
}

// Session settings are an allow-list: with no admin additions, whatever could start a program,
// rewrite a call or switch hooks off is taken out and named, what the safe list passes is kept
// byte for byte, and a key the safe list does not know is held without counting as an attempt.
func TestMergeHoldsWhatTheSafeListDoesNotPass(t *testing.T) {
	in := []byte(`{"model":"opus","statusLine":{"type":"command","command":"id"},"futureKey":1,
		"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"rewrite-input"}]}],"Stop":[{"hooks":[{"type":"command","command":"x"}]}]},
		"env":{"CLAUDE_CODE_SIMPLE":"1","DISABLE_TELEMETRY":"1"},"disableAllHooks":true}`)
	e := entry(t, managedconfig.Enforce)
	out, res, err := Merge(in, e)
	if err != nil {
		t.Fatal(err)
	}
	wantHeld := "statusLine,futureKey,hooks.Stop,env.CLAUDE_CODE_SIMPLE,disableAllHooks,hooks.PreToolUse"
	if got := strings.Join(res.Held, ","); got != wantHeld {
		t.Errorf("held %s, want %s", got, wantHeld)
	}
	if got := strings.Join(res.Attempts, ","); strings.Contains(got, "futureKey") || !strings.Contains(got, "statusLine") {
		t.Errorf("attempts %s: an unknown key is no attempt, a status line is", got)
	}
	after := mustParse(t, out)
	if len(foreignHooks(t, after)) != 0 {
		t.Errorf("a foreign hook survived: %s", out)
	}
	if ours := ourGroups(t, after); len(ours) != 1 {
		t.Errorf("want our group once: %s", out)
	}
	for _, kept := range []string{`"model": "opus"`, `"DISABLE_TELEMETRY": "1"`} {
		if !bytes.Contains(out, []byte(kept)) {
			t.Errorf("%s was not kept: %s", kept, out)
		}
	}
	again, res2, err := Merge(out, e)
	if err != nil || res2.Changed || !bytes.Equal(again, out) {
		t.Errorf("not idempotent: %+v %v", res2, err)
	}
}

// An admin names MCP servers one by one: the others in the same mcpServers are held.
func TestMergeHoldsMCPServersTheAdminDidNotName(t *testing.T) {
	e := entryAllowing(t, managedconfig.Enforce, "mcpServers.github")
	out, res, err := Merge([]byte(`{"mcpServers":{"github":{"command":"gh-mcp"},"evil":{"command":"sh"}}}`), e)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Held, []string{"mcpServers.evil"}) || !slices.Equal(res.Attempts, []string{"mcpServers.evil"}) {
		t.Errorf("held %v, attempts %v", res.Held, res.Attempts)
	}
	if !bytes.Contains(out, []byte("gh-mcp")) || bytes.Contains(out, []byte("evil")) {
		t.Errorf("result: %s", out)
	}
}

// An allowed server's definition keeps in its env only what the admin named for it, and never a
// variable that changes what its command runs: Claude Code's managed allow-list compares the
// command alone, so the agent's PATH or NODE_OPTIONS would run the agent's code under it.
func TestAnAllowedMCPServerIsHeldWhenItsEnvChangesWhatItRuns(t *testing.T) {
	e := entryAllowing(t, managedconfig.Enforce, "mcpServers.github", "mcpServers.fs", "mcpServers.fs.env.ROOT", "mcpServers.wide", "mcpServers.wide.env")
	for _, tc := range []struct {
		server, env string
		held        bool
	}{
		{"github", "", false},
		{"github", `{"PATH":"/tmp/bin:/usr/bin"}`, true},
		{"github", `{"NODE_OPTIONS":"--require ./x.js"}`, true},
		{"github", `{"DYLD_INSERT_LIBRARIES":"/tmp/x.dylib"}`, true},
		{"github", `{"PYTHONSTARTUP":"/tmp/x.py"}`, true},
		{"github", `{"GITHUB_TOKEN":"t"}`, true}, // not named for it
		{"fs", `{"ROOT":"/w"}`, false},
		{"fs", `{"ROOT":"/w","LD_PRELOAD":"/tmp/x.so"}`, true},
		{"wide", `{"TOKEN":"x"}`, false},
		{"wide", `{"TOKEN":"x","NODE_OPTIONS":"--require /tmp/x.js"}`, true}, // never, named or not
	} {
		def := `{"command":"npx"}`
		if tc.env != "" {
			def = `{"command":"npx","env":` + tc.env + `}`
		}
		_, res, err := Merge([]byte(`{"mcpServers":{"`+tc.server+`":`+def+`}}`), e)
		if err != nil {
			t.Fatal(err)
		}
		if held := slices.Contains(res.Held, "mcpServers."+tc.server); held != tc.held {
			t.Errorf("%s with env %s: held %v, want %v (attempts %v)", tc.server, tc.env, held, tc.held, res.Attempts)
		}
	}
}

// A user's own settings file keeps every key but those only an attempt explains.
func TestWithoutAttemptsTakesOutOnlyWhatStartsAProgram(t *testing.T) {
	in := []byte(`{"model":"opus","someNewKey":1,"apiKeyHelper":"sh x","env":{"LANG":"C","CLAUDE_CODE_SHELL_PREFIX":"/tmp/w"},"hooks":{"Stop":[]}}`)
	out, attempts, err := WithoutAttempts(in, allowlist.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(out, &got)
	env, _ := got["env"].(map[string]any)
	if got["model"] != "opus" || got["someNewKey"] == nil || got["apiKeyHelper"] != nil || env["LANG"] != "C" || env["CLAUDE_CODE_SHELL_PREFIX"] != nil || got["hooks"] != nil && len(got["hooks"].(map[string]any)) != 0 {
		t.Errorf("kept %s (attempts %q)", out, attempts)
	}
	if out, _, _ := WithoutAttempts([]byte(`{"model":"opus"}`), allowlist.New(nil)); out != nil {
		t.Errorf("a clean file was rewritten: %s", out)
	}
}
