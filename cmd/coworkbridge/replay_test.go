package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/corpus"
)

func TestReplayShowsWhatACandidateWouldChange(t *testing.T) {
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	dir := t.TempDir()
	rec := func(rid, tool, input, decision, rule, omitted string) string {
		r := map[string]any{"schema": 2, "ts": "2026-11-20T10:00:00Z", "rid": rid, "session": "local_a", "agent": "cowork", "transport": "vm-spool",
			"mode": "observe", "enforced": false, "tool": tool, "input": json.RawMessage(input), "decision": decision, "latency_us": 1, "cwd": "/Users/ada/p"}
		if rule != "" {
			r["rule"] = rule
		}
		if omitted != "" {
			r["input_omitted"] = omitted
		}
		b, _ := json.Marshal(r)
		return string(b) + "\n"
	}
	log := filepath.Join(dir, "decisions.jsonl")
	os.WriteFile(log, []byte(
		rec("01", "Read", `{"file_path":".env"}`, "deny", "read.dotenv", "")+
			rec("02", "Read", `{"file_path":".env.local"}`, "deny", "read.dotenv", "")+
			rec("03", "Bash", `{"command":"git clean -f"}`, "allow", "", "")+ // judged under an older policy
			rec("04", "Bash", `{"command":"ls"}`, "allow", "", "")+
			rec("05", "Bash", `null`, "allow", "", "none")+
			rec("06", "Bash", `null`, "deny", "coworkbridge.quarantine", "")+
			"garbage\n"), 0o600)
	candidate := filepath.Join(dir, "candidate.json")
	os.WriteFile(candidate, []byte(`{"version":1,"cowork_enabled":true,"policy":{"disabled_rules":["read.dotenv","read.dotenv-project"]}}`), 0o600)
	res := replayJSON(t, log, candidate)
	if res.Records != 6 || res.Replayed != 4 || res.NotLogged != 1 || res.GuardEvents != 1 || res.Invalid != 1 {
		t.Errorf("counts %+v", res)
	}
	if res.Changes["deny->allow"] != 2 || res.Changes["allow->ask"] != 1 || len(res.Changes) != 2 {
		t.Errorf("changes %v, want 2 deny->allow (read.dotenv disabled) and 1 allow->ask (git clean -f)", res.Changes)
	}
	if ex := res.Examples["allow->ask"]; len(ex) != 1 || ex[0].RID != "03" || ex[0].NewRule != "bash.git-clean-force" {
		t.Errorf("examples %+v", ex)
	}
	var out, errb bytes.Buffer
	dispatch(context.Background(), []string{"check", "--replay", log, "--config", candidate}, stdio{out: &out, err: &errb})
	if !strings.Contains(out.String(), "deny → allow: 2") {
		t.Errorf("text output:\n%s", out.String())
	}
}

func TestReplayRefusesAnInvalidCandidateNamingItsProblems(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "d.jsonl")
	os.WriteFile(log, nil, 0o600)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"version":1,"mode":"enforcee"}`), 0o600)
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"check", "--replay", log, "--config", bad}, stdio{out: &out, err: &errb}); code != exitFail ||
		!strings.Contains(errb.String(), "enforcee") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	if code := dispatch(context.Background(), []string{"check", "--config", bad}, stdio{out: &out, err: &errb}); code != exitUsage {
		t.Errorf("--config without --replay: exit %d", code)
	}
}

// A live log's rotated files hold its older calls: a replay of the log reads them too, oldest first.
func TestReplayReadsTheRotatedFilesToo(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "d.jsonl")
	line := `{"rid":"%s","tool":"Read","input":{"file_path":".env"},"decision":"deny","rule":"read.dotenv"}` + "\n"
	os.WriteFile(log+".2", []byte(fmt.Sprintf(line, "a")), 0o600)
	os.WriteFile(log+".1", []byte(fmt.Sprintf(line, "b")), 0o600)
	os.WriteFile(log, []byte(fmt.Sprintf(line, "c")), 0o600)
	candidate := filepath.Join(dir, "candidate.json")
	os.WriteFile(candidate, []byte(`{"version":1,"cowork_enabled":true,"policy":{"disabled_rules":["read.dotenv","read.dotenv-project"]}}`), 0o600)
	res := replayJSON(t, log, candidate)
	if res.Records != 3 || res.Changes["deny->allow"] != 3 || res.Examples["deny->allow"][0].RID != "a" {
		t.Errorf("replayed %+v; want all three files, the oldest first", res)
	}
}

// replayJSON runs check --replay LOG --config CANDIDATE --json and decodes what it prints.
func replayJSON(t *testing.T, log, candidate string) corpus.Replayed {
	t.Helper()
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"check", "--replay", log, "--config", candidate, "--json"}, stdio{out: &out, err: &errb}); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var res corpus.Replayed
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return res
}

// The report shows a candidate's replay beside the rest, judging a record shipped twice once,
// with the calls themselves (host, session, input) on the page.
func TestReportWithACandidateShowsWhatItWouldChange(t *testing.T) {
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	dir := t.TempDir()
	log := filepath.Join(dir, "d.jsonl")
	line := `{"ts":"2026-11-20T10:00:00Z","host":"%s","session":"local_a","rid":"%s","mode":"observe","tool":"Read","input":{"file_path":".env"},"decision":"deny","rule":"read.dotenv"}` + "\n"
	os.WriteFile(log, []byte(fmt.Sprintf(line, "mac-a", "1")+fmt.Sprintf(line, "mac-a", "1")+fmt.Sprintf(line, "mac-b", "1")), 0o600)
	candidate := filepath.Join(dir, "candidate.json")
	os.WriteFile(candidate, []byte(`{"version":1,"cowork_enabled":true,"policy":{"disabled_rules":["read.dotenv","read.dotenv-project"]}}`), 0o600)

	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"report", "--json", "--candidate", candidate, log}, stdio{out: &out, err: &errb}); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rp struct {
		Replay struct {
			Candidate   string          `json:"candidate"`
			Fingerprint string          `json:"rules_fingerprint"`
			Result      corpus.Replayed `json:"result"`
		} `json:"replay"`
	}
	if err := json.Unmarshal(out.Bytes(), &rp); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	r := rp.Replay
	if r.Candidate != candidate || r.Fingerprint == "" || r.Result.Records != 2 || r.Result.Changes["deny->allow"] != 2 {
		t.Errorf("replay %+v; want the two distinct records (the duplicate dropped) turned deny->allow", r)
	}
	if ex := r.Result.Examples["deny->allow"]; len(ex) != 2 || ex[0].Host != "mac-a" || ex[1].Host != "mac-b" || ex[0].Session != "local_a" {
		t.Errorf("examples %+v", ex)
	}

	page := filepath.Join(dir, "r.html")
	out.Reset()
	if code := dispatch(context.Background(), []string{"report", "--html", page, "--candidate", candidate, log}, stdio{out: &out, err: &errb}); code != exitOK {
		t.Fatalf("--html: exit %d: %s", code, errb.String())
	}
	html, _ := os.ReadFile(page)
	for _, want := range []string{`id="replay-changes"`, "<td>mac-b</td>", "read.dotenv"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if code := dispatch(context.Background(), []string{"report", "--candidate", candidate, "-"}, stdio{in: strings.NewReader(""), out: &out, err: &errb}); code != exitUsage {
		t.Errorf("--candidate with stdin: exit %d, want a usage error", code)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"version":1,"mdoe":"enforce"}`), 0o600)
	errb.Reset()
	if code := dispatch(context.Background(), []string{"report", "--candidate", bad, log}, stdio{out: &out, err: &errb}); code != exitFail || !strings.Contains(errb.String(), "mdoe") {
		t.Errorf("an invalid candidate: exit %d, stderr %q", code, errb.String())
	}
}

// REFERENCE's replay example says what the replay prints: its counts are the command's.
func TestTheReferencesReplayCountsAreWhatTheReplayPrints(t *testing.T) {
	ref, err := os.ReadFile("../../deploy/REFERENCE.md")
	if err != nil {
		t.Fatal(err)
	}
	claim := regexp.MustCompile(`the replay shows (\d+) asks becoming allows[^)]*\), and (\d+) denies becoming asks`).FindSubmatch(ref)
	if claim == nil {
		t.Fatal("REFERENCE.md no longer says what the example replay shows")
	}
	_, out, errs := runCLI(t, "", "check", "--replay", "../../deploy/examples/decisions.sample.jsonl", "--config", "../../deploy/examples/candidate.json")
	for _, c := range []struct{ line, want string }{{"ask → allow: ", string(claim[1])}, {"deny → ask: ", string(claim[2])}} {
		if !strings.Contains(out, "\n"+c.line+c.want+"\n") {
			t.Errorf("REFERENCE.md says %s%s; the replay printed:\n%s%s", c.line, c.want, out, errs)
		}
	}
}
