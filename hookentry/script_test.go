package hookentry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// shell is one way Claude Code's /bin/sh -c may be carried out.
type shell struct {
	name string
	argv []string // the script is appended after these
}

// shells lists every shell present on this machine. CI installs dash, busybox and zsh; where one
// is missing the tests run under the rest and say which were skipped.
func shells(t *testing.T) []shell {
	t.Helper()
	var found []shell
	add := func(name string, bin string, args ...string) {
		p, err := exec.LookPath(bin)
		if err != nil {
			t.Logf("shell %s not found; not tested here", name)
			return
		}
		found = append(found, shell{name, append(append([]string{p}, args...), "-c")})
	}
	add("sh", "sh")
	add("dash", "dash")
	add("bash", "bash")
	add("busybox-sh", "busybox", "sh")
	add("zsh-emulate-sh", "zsh", "--emulate", "sh")
	add("zsh", "zsh")
	// bash started under the name sh runs in POSIX mode, as macOS /bin/sh does.
	if p, err := exec.LookPath("bash"); err == nil {
		link := filepath.Join(t.TempDir(), "sh")
		if err := os.Symlink(p, link); err == nil {
			found = append(found, shell{"bash-as-sh", []string{link, "-c"}})
		}
	}
	if len(found) == 0 {
		t.Fatal("no shell found")
	}
	return found
}

type hookResult struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// runHook runs a script the way Claude Code does: sh -c, payload on stdin, CLAUDE_CONFIG_DIR set,
// cwd somewhere else.
func runHook(t *testing.T, sh shell, script, configDir string, payload []byte) hookResult {
	t.Helper()
	return runHookEnv(t, sh, script, []string{"CLAUDE_CONFIG_DIR=" + configDir, "PATH=" + os.Getenv("PATH"), "HOME=/nonexistent"}, payload)
}

func script(t *testing.T, mode managedconfig.Mode, dt time.Duration) string {
	t.Helper()
	s, err := Script(ScriptParams{Mode: mode, DecisionTimeout: dt, MaxLineBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// envelope is the spool line the hook writes, as the daemon reads it.
type envelope = claudehook.Envelope

func spoolLines(t *testing.T, configDir string) []envelope {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(configDir, "coworkbridge", "events.jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var envs []envelope
	for i, line := range bytes.SplitAfter(data, []byte("\n")) {
		if len(line) == 0 || string(line) == "\n" {
			continue // the end, or the fresh line each append starts with
		}
		if line[len(line)-1] != '\n' {
			t.Fatalf("line %d has no newline", i)
		}
		var e envelope
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("line %d is not JSON (%v): %.200q", i, err, line)
		}
		if e.V != 1 || !claudehook.ValidRID(e.RID) {
			t.Fatalf("line %d: bad envelope v=%d rid=%q", i, e.V, e.RID)
		}
		envs = append(envs, e)
	}
	return envs
}

func setAlive(t testing.TB, configDir string, until time.Time) {
	t.Helper()
	dir := filepath.Join(configDir, "coworkbridge")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "alive")
	if err := os.WriteFile(p, []byte(strconv.FormatInt(until.Unix(), 10)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// As the daemon does: hooks read the date, not the content.
	if err := os.Chtimes(p, until, until); err != nil {
		t.Fatal(err)
	}
}

const payload = `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls -la\n\tpwd","description":"l\u00e9s \"x\""},"tool_use_id":"toolu_1"}`

func compact(t *testing.T, s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The agent can append to the spool too: an unterminated line it leaves must not swallow the next
// hook's line (before, the two became one malformed line and the call's input was lost).
func TestAJunkPrefixCannotGlueItselfToTheHooksLine(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(sh.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".claude")
			os.MkdirAll(filepath.Join(dir, "coworkbridge"), 0o700)
			sp := filepath.Join(dir, "coworkbridge", "events.jsonl")
			if err := os.WriteFile(sp, []byte(`{"junk":"no newline`), 0o600); err != nil {
				t.Fatal(err)
			}
			if res := runHook(t, sh, script(t, managedconfig.Observe, 10*time.Second), dir, []byte(payload)); res.code != 0 {
				t.Fatalf("code %d", res.code)
			}
			data, _ := os.ReadFile(sp)
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			last := lines[len(lines)-1]
			var e envelope
			if err := json.Unmarshal([]byte(last), &e); err != nil || compact(t, string(e.Event)) != compact(t, payload) {
				t.Errorf("the hook's line is not whole after the junk: %q (%v)", data, err)
			}
		})
	}
}

func TestObserveAppendsTheEnvelopeAndPrintsNothing(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(sh.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".claude")
			// A pretty-printed payload with CRLF line ends: raw newlines must go, the JSON stays equal.
			pretty := strings.ReplaceAll("{\n  \"tool_name\": \"Bash\",\n  \"tool_input\": {\"command\": \"echo hi\"}\n}", "\n", "\r\n")
			for _, p := range []string{payload, pretty} {
				res := runHook(t, sh, script(t, managedconfig.Observe, 10*time.Second), dir, []byte(p))
				if res.code != 0 || res.stdout != "" || res.stderr != "" {
					t.Fatalf("code %d stdout %q stderr %q; want 0 and nothing", res.code, res.stdout, res.stderr)
				}
			}
			envs := spoolLines(t, dir)
			if len(envs) != 2 {
				t.Fatalf("%d lines, want 2", len(envs))
			}
			if envs[0].Mode != "observe" || compact(t, string(envs[0].Event)) != compact(t, payload) {
				t.Errorf("envelope %+v does not carry the payload", envs[0])
			}
			if compact(t, string(envs[1].Event)) != `{"tool_name":"Bash","tool_input":{"command":"echo hi"}}` {
				t.Errorf("CRLF payload came out as %s", envs[1].Event)
			}
			if envs[0].RID == envs[1].RID {
				t.Error("two hooks got the same request id")
			}
			leftovers, _ := filepath.Glob(filepath.Join(dir, "coworkbridge", ".ev-*"))
			if len(leftovers) != 0 {
				t.Errorf("temporary files left: %v", leftovers)
			}
		})
	}
}

func TestObserveRecordsAnEmptyPayloadAsNull(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(sh.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".claude")
			res := runHook(t, sh, script(t, managedconfig.Observe, 10*time.Second), dir, nil)
			if res.code != 0 || res.stdout != "" {
				t.Fatalf("code %d stdout %q", res.code, res.stdout)
			}
			envs := spoolLines(t, dir)
			if len(envs) != 1 || string(envs[0].Event) != "null" {
				t.Fatalf("got %+v, want one line with a null event", envs)
			}
		})
	}
}

func TestObserveNeverFailsEvenWhenItCannotWrite(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(sh.name, func(t *testing.T) {
			// A file where the folder should be: mkdir and every write fail, even for root.
			blocker := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(blocker, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			res := runHook(t, sh, script(t, managedconfig.Observe, 10*time.Second), filepath.Join(blocker, ".claude"), []byte(payload))
			if res.code != 0 || res.stdout != "" || res.stderr != "" {
				t.Fatalf("code %d stdout %q stderr %q; want 0 and nothing", res.code, res.stdout, res.stderr)
			}
		})
	}
}

// background runs step every period until the test ends, and waits for it then.
func background(t testing.TB, period time.Duration, step func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			time.Sleep(period)
			step()
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// fakeDaemon answers every new spool line with decide(envelope), written atomically like the real
// daemon. It stops with the test.
func fakeDaemon(t testing.TB, configDir string, decide func(envelope) []byte) {
	t.Helper()
	spool := filepath.Join(configDir, "coworkbridge", "events.jsonl")
	decisions := filepath.Join(configDir, "coworkbridge", "decisions")
	var off int64
	background(t, time.Millisecond, func() {
		f, err := os.Open(spool)
		if err != nil {
			return
		}
		defer f.Close()
		f.Seek(off, 0)
		r := bufio.NewReaderSize(f, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			off += int64(len(line))
			var e envelope
			if json.Unmarshal(line, &e) != nil {
				continue
			}
			tmp := filepath.Join(decisions, "."+e.RID)
			os.WriteFile(tmp, decide(e), 0o600)
			os.Rename(tmp, filepath.Join(decisions, e.RID+".json"))
		}
	})
}

// A hook in the VM stages its line in the staging folder when the daemon has made it (nothing
// watches that folder, so the file wakes nobody), beside the spool when it has not, and leaves
// nothing in either place.
func TestAHookInTheVMStagesItsLineInTheStagingFolderWhenThereIsOne(t *testing.T) {
	for _, sh := range shells(t) {
		for _, staging := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/staging=%v", sh.name, staging), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), ".claude")
				setAlive(t, dir, time.Now().Add(time.Minute))
				bridge := filepath.Join(dir, "coworkbridge")
				want := bridge
				if staging {
					want = filepath.Join(bridge, "staging")
					if err := os.Mkdir(want, 0o700); err != nil {
						t.Fatal(err)
					}
				}
				staged := make(chan string, 1)
				fakeDaemon(t, dir, func(e envelope) []byte {
					// The hook removes its staged file only once answered: it is there now.
					where := "nowhere"
					for _, d := range []string{bridge, filepath.Join(bridge, "staging")} {
						if _, err := os.Lstat(filepath.Join(d, ".ev-"+e.RID)); err == nil {
							where = d
						}
					}
					staged <- where
					return nil
				})
				res := runHook(t, sh, script(t, managedconfig.Enforce, 5*time.Second), dir, []byte(payload))
				if res.code != 0 || res.stdout != "" {
					t.Fatalf("code %d stdout %q; want an allowed call", res.code, res.stdout)
				}
				if got := <-staged; got != want {
					t.Errorf("the line was staged in %s, want %s", got, want)
				}
				for _, d := range []string{bridge, filepath.Join(bridge, "staging")} {
					if left, _ := filepath.Glob(filepath.Join(d, ".ev-*")); len(left) != 0 {
						t.Errorf("left behind: %v", left)
					}
				}
			})
		}
	}
}

const denyJSON = `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"blocked by rule x"}}`

func TestEnforcePrintsTheDecisionAndRemovesIt(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(sh.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".claude")
			setAlive(t, dir, time.Now().Add(time.Minute))
			fakeDaemon(t, dir, func(e envelope) []byte {
				if strings.Contains(string(e.Event), "rm -rf") {
					return []byte(denyJSON + "\n")
				}
				return nil // no objection
			})
			s := script(t, managedconfig.Enforce, 5*time.Second)
			res := runHook(t, sh, s, dir, []byte(`{"tool_name":"Bash","tool_input":{"command":"rm -rf /"}}`))
			if res.code != 0 || res.stdout != denyJSON+"\n" || res.stderr != "" {
				t.Fatalf("code %d stdout %q stderr %q; want the parked deny", res.code, res.stdout, res.stderr)
			}
			res = runHook(t, sh, s, dir, []byte(payload))
			if res.code != 0 || res.stdout != "" {
				t.Fatalf("code %d stdout %q; an empty decision must print nothing", res.code, res.stdout)
			}
			envs := spoolLines(t, dir)
			if len(envs) != 2 || envs[0].Mode != "enforce" {
				t.Fatalf("spool %+v", envs)
			}
			left, _ := os.ReadDir(filepath.Join(dir, "coworkbridge", "decisions"))
			tmp, _ := filepath.Glob(filepath.Join(dir, "coworkbridge", ".ev-*"))
			if len(left) != 0 || len(tmp) != 0 {
				t.Errorf("left behind: decisions %v, temporary files %v", left, tmp)
			}
		})
	}
}

// denyReason checks that out is exactly one deny object and returns its reason.
func denyReason(t *testing.T, res hookResult) string {
	t.Helper()
	if res.code != 0 || res.stderr != "" {
		t.Fatalf("code %d stderr %q; a hook must exit 0 silently", res.code, res.stderr)
	}
	var out struct {
		H struct {
			Event    string `json:"hookEventName"`
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	if err := dec.Decode(&out); err != nil || dec.More() {
		t.Fatalf("stdout %q is not exactly one JSON object", res.stdout)
	}
	if out.H.Event != "PreToolUse" || out.H.Decision != "deny" || !strings.HasPrefix(out.H.Reason, "coworkbridge: ") {
		t.Fatalf("not a coworkbridge deny: %q", res.stdout)
	}
	return out.H.Reason
}

// The bounds here are generous on purpose: they tell apart "denied at once" from "waited for the
// decision timeout", and the latter from "ran into the hook timeout", without timing tight paths.
func TestEnforceFailsClosed(t *testing.T) {
	const dt = 4 * time.Second
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string) string // returns CLAUDE_CONFIG_DIR
		payload string
		reason  string
		minWait time.Duration
		maxWait time.Duration
	}{
		{"alive missing", func(t *testing.T, dir string) string { return dir }, payload, "not running on this Mac", 0, dt / 2},
		{"alive lapsed", func(t *testing.T, dir string) string {
			setAlive(t, dir, time.Now().Add(-time.Second))
			return dir
		}, payload, "not running on this Mac", 0, dt / 2},
		{"alive rewritten by someone else (so dated now)", func(t *testing.T, dir string) string {
			setAlive(t, dir, time.Now().Add(time.Hour))
			os.WriteFile(filepath.Join(dir, "coworkbridge", "alive"), []byte("soon; rm -rf /\n"), 0o600)
			return dir
		}, payload, "not running on this Mac", 0, dt / 2},
		{"empty stdin", func(t *testing.T, dir string) string {
			setAlive(t, dir, time.Now().Add(time.Hour))
			return dir
		}, "", "received no tool call data", 0, dt / 2},
		{"no decision", func(t *testing.T, dir string) string {
			setAlive(t, dir, time.Now().Add(time.Hour))
			return dir
		}, payload, "no decision from coworkbridge within 4s", dt - time.Second, 2 * dt},
		{"unwritable folder", func(t *testing.T, dir string) string {
			setAlive(t, dir, time.Now().Add(time.Hour))
			// alive is readable but the folder cannot take new files: replace decisions and the
			// spool by folders so that every write fails even for root.
			os.MkdirAll(filepath.Join(dir, "coworkbridge", "events.jsonl"), 0o700)
			return dir
		}, payload, "spool is not a plain file", 0, dt / 2},
	}
	for _, sh := range shells(t) {
		for _, tt := range tests {
			t.Run(sh.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				dir := tt.setup(t, filepath.Join(t.TempDir(), ".claude"))
				res := runHook(t, sh, script(t, managedconfig.Enforce, dt), dir, []byte(tt.payload))
				if r := denyReason(t, res); !strings.Contains(r, tt.reason) {
					t.Errorf("reason %q lacks %q", r, tt.reason)
				}
				if res.elapsed < tt.minWait || res.elapsed > tt.maxWait {
					t.Errorf("denied after %v, want between %v and %v", res.elapsed, tt.minWait, tt.maxWait)
				}
			})
		}
	}
}

// Parallel tool calls run their hooks at once; the single write per line keeps lines whole.
func TestConcurrentHooksLeaveIntactLines(t *testing.T) {
	sizes := []int{0, 1, 100, 4 << 10, 64 << 10, 1 << 20}
	for _, sh := range shells(t) {
		t.Run(sh.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".claude")
			s := script(t, managedconfig.Observe, 10*time.Second)
			const n = 64
			var wg sync.WaitGroup
			want := map[string]bool{}
			for i := range n {
				size := sizes[i%len(sizes)]
				p := []byte{}
				if size > 0 {
					p = []byte(fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("x", size)))
					want[string(p)] = true
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if res := runHook(t, sh, s, dir, p); res.code != 0 || res.stdout != "" {
						t.Errorf("hook %d: code %d stdout %q", i, res.code, res.stdout)
					}
				}()
			}
			wg.Wait()
			envs := spoolLines(t, dir)
			if len(envs) != n {
				t.Fatalf("%d lines, want %d", len(envs), n)
			}
			rids := map[string]bool{}
			for _, e := range envs {
				rids[e.RID] = true
				delete(want, string(e.Event))
			}
			if len(rids) != n || len(want) != 0 {
				t.Errorf("%d distinct rids, %d payloads missing", len(rids), len(want))
			}
		})
	}
}

func TestScriptRejectsBadParams(t *testing.T) {
	for _, p := range []ScriptParams{
		{Mode: "block", DecisionTimeout: time.Second, MaxLineBytes: 1},
		{Mode: managedconfig.Enforce, DecisionTimeout: 500 * time.Millisecond, MaxLineBytes: 1},
		{Mode: managedconfig.Observe, DecisionTimeout: time.Second},
	} {
		if _, err := Script(p); err == nil {
			t.Errorf("Script(%+v) accepted", p)
		}
	}
}

func TestScriptsRunOnlyBuiltinsAndProgramsByAbsolutePath(t *testing.T) {
	builtins := map[string]bool{"printf": true, "read": true, "exec": true, "umask": true, "exit": true, "cb_deny": true,
		"trap": true, "set": true, "kill": true, "wait": true}
	programs := map[string]bool{trBin: true, odBin: true, catBin: true, dateBin: true, ddBin: true, rmBin: true,
		mkdirBin: true, sleepBin: true}
	word := regexp.MustCompile(`(?m)(?:^|[;&|{(]|\bthen|\belse|\bdo|\$\()\s*([a-z_/]+)\b`)
	quoted := regexp.MustCompile(`\\'|'[^']*'|"(?:[^"\\]|\\.)*"`) // \' first: the quote in 'it'\''s'
	keywords := map[string]bool{"if": true, "then": true, "else": true, "fi": true, "for": true, "in": true, "do": true,
		"done": true, "while": true, "case": true, "esac": true, "break": true}
	for _, mode := range []managedconfig.Mode{managedconfig.Observe, managedconfig.Enforce} {
		p := ScriptParams{Mode: mode, DecisionTimeout: 10 * time.Second, MaxLineBytes: 4 << 20, HostChannel: "/Users/a b/it's"}
		s, err := Script(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(s, "# "+Marker+" v") || !strings.Contains(s, "mode="+string(mode)) {
			t.Errorf("%s script lacks its marker line", mode)
		}
		if !strings.Contains(s, "exec "+envBin+" -i ") {
			t.Errorf("%s script does not start over with a clean environment", mode)
		}
		body, _ := scriptBody(p, 10)
		code := quoted.ReplaceAllString(body, "''")
		for _, m := range word.FindAllStringSubmatch(code, -1) {
			w := m[1]
			if !builtins[w] && !programs[w] && !keywords[w] && !strings.HasPrefix(w, "cb_") {
				t.Errorf("%s script runs %q, which is neither a builtin nor one of the programs it names by path", mode, w)
			}
		}
		for _, bad := range []string{"$RANDOM", "+%N", "[[", "local ", "$path", "$status", "mktemp", "wc ", "$PATH", "$HOME"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s script uses %q", mode, bad)
			}
		}
	}
}

// The script's own denies (coworkbridge not running, no decision in time) carry the
// organisation's block message as the daemon's do, and stay one JSON object under every shell
// whatever the text holds: quotes, an apostrophe, a backslash, a percent sign, a line break.
func TestTheScriptsOwnDenyCarriesTheOrganisationsNotice(t *testing.T) {
	text := "Example Corp's \"AI\" policy: 100% reviewed \\ see below.\nCall the desk."
	n := managedconfig.Notices{Default: managedconfig.Notice{Text: text, HelpURL: "https://it.example.com/ai?rule={rule}&d={decision}"}}
	s, err := Script(ScriptParams{Mode: managedconfig.Enforce, DecisionTimeout: 4 * time.Second, MaxLineBytes: 4 << 20, Notice: n})
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range shells(t) {
		t.Run(sh.name, func(t *testing.T) {
			res := runHook(t, sh, s, filepath.Join(t.TempDir(), ".claude"), []byte(payload))
			var out struct {
				H struct {
					Decision string `json:"permissionDecision"`
					Reason   string `json:"permissionDecisionReason"`
				} `json:"hookSpecificOutput"`
			}
			if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || out.H.Decision != "deny" {
				t.Fatalf("stdout %q is not a deny: %v", res.stdout, err)
			}
			want := text + "\ncoworkbridge: coworkbridge is not running on this Mac"
			if !strings.HasPrefix(out.H.Reason, want) || !strings.HasSuffix(out.H.Reason, "\nMore: https://it.example.com/ai?rule=coworkbridge.hook&d=deny") {
				t.Errorf("reason %q", out.H.Reason)
			}
		})
	}
}

// An enforce hook answers by its own deadline whatever it waits on: here its standard input,
// which the CLI never closes. Its watchdog denies, once, and the hook leaves no lock behind.
func TestEnforceDeniesByItsOwnDeadlineWhenItsInputStalls(t *testing.T) {
	// A stalled hook's request id is known to nobody: a claim left behind is one that was not
	// there before and stays. Other test processes' hooks make claims too, for the moments of
	// their answers: those go.
	before := claimFiles(t)
	defer func() {
		var left []string
		for range 200 {
			left = slices.DeleteFunc(claimFiles(t), func(name string) bool { return slices.Contains(before, name) })
			if len(left) == 0 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("the watchdog left its claims behind: %v", left)
	}()
	t.Run("shells", func(t *testing.T) { enforceDeniesWhenItsInputStalls(t) })
}

func enforceDeniesWhenItsInputStalls(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), ".claude")
			setAlive(t, dir, time.Now().Add(time.Hour))
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pw.Close() // never written, never closed while the hook runs
			args := append(slices.Clone(sh.argv[1:]), script(t, managedconfig.Enforce, time.Second))
			cmd := exec.Command(sh.argv[0], args...)
			cmd.Env = []string{"CLAUDE_CONFIG_DIR=" + dir, "PATH=" + os.Getenv("PATH"), "HOME=/nonexistent"}
			cmd.Stdin = pr
			var out bytes.Buffer
			cmd.Stdout = &out
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pr.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatal("the hook waited on its input past its own deadline")
			}
			res := hookResult{stdout: out.String(), elapsed: time.Since(start)}
			if r := denyReason(t, res); !strings.Contains(r, "did not finish within 3s") {
				t.Errorf("reason %q: want the watchdog's deny", r)
			}
			if strings.Count(out.String(), "permissionDecision\"") != 1 {
				t.Errorf("stdout %q: want exactly one answer", out.String())
			}
		})
	}
}

// claimFiles lists the enforce hooks' claims (claimPath) in /tmp.
func claimFiles(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob(claimPath("*"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// The watchdog that guards an enforce hook is stopped once the hook has answered: it says
// nothing, and leaves no lock behind.
func TestAnAnsweredEnforceHookLeavesNoWatchdogOutputOrLock(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), ".claude")
			setAlive(t, dir, time.Now().Add(time.Hour))
			fakeDaemon(t, dir, func(envelope) []byte { return nil })
			res := runHook(t, sh, script(t, managedconfig.Enforce, time.Second), dir, []byte(payload))
			if res.code != 0 || res.stdout != "" {
				t.Fatalf("code %d stdout %q: want a no objection", res.code, res.stdout)
			}
			// A watchdog left alive would hold the hook's output open to its deadline and then
			// print its deny there: the empty output says it was stopped.
			for _, e := range spoolLines(t, dir) {
				if _, err := os.Lstat(claimPath(e.RID)); err == nil {
					t.Errorf("the claim %s was left behind", claimPath(e.RID))
				}
			}
		})
	}
}
