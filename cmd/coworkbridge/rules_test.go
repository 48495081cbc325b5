package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rules lists the policy as the daemon runs it, with each rule's effective mode and source,
// and explains one; a misspelled id is answered with the one meant.
func TestRulesListsThePolicyInForceAndExplainsOneRule(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("COWORKBRIDGE_STATE_DIR", filepath.Join(dir, "state"))
	cfg := filepath.Join(dir, "managed.json")
	os.WriteFile(cfg, []byte(`{"version":1,"cowork_enabled":true,"mode":"enforce",
		"policy":{"disabled_rules":["bash.git-push-force"],"rule_modes":{"bash.fork-bomb":"observe"}},
		"block_message":{"rules":{"bash.rm-critical":{"text":"Ask IT first.","help_url":"https://it.example.com/{rule}"}}}}`), 0o644)
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", cfg)

	code, out, _ := runCLI(t, "", "rules")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	fields := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 4 {
			fields[f[0]] = f[1:]
		}
	}
	for id, want := range map[string]string{
		"bash.git-push-force": "deny disabled", "bash.fork-bomb": "deny observe", "bash.rm-critical": "deny enforce",
	} {
		if got := strings.Join(fields[id][:2], " "); got != want || !strings.HasPrefix(fields[id][2], "default/bash.rules:") {
			t.Errorf("%s listed as %v, want %s from default/bash.rules", id, fields[id], want)
		}
	}
	if !strings.Contains(out, cfg+" (config_hash ") || !strings.Contains(out, "rules fingerprint ") {
		t.Errorf("the list does not name its configuration:\n%s", out)
	}

	code, out, _ = runCLI(t, "", "rules", "bash.rm-critical")
	for _, want := range []string{"verdict:  deny", "mode:     enforce (managed.json's mode)", "source:   default/bash.rules:",
		"matches:  validator RecursiveDeleteCritical", `notice:   "Ask IT first.", more at https://it.example.com/{rule}`} {
		if !strings.Contains(out, want) {
			t.Errorf("rules bash.rm-critical lacks %q:\n%s", want, out)
		}
	}
	if code != exitOK {
		t.Errorf("exit %d", code)
	}
	if code, _, errOut := runCLI(t, "", "rules", "bash.rm-critcal"); code != exitFail || !strings.Contains(errOut, `did you mean "bash.rm-critical"?`) {
		t.Errorf("a misspelled id: exit %d %s", code, errOut)
	}
	_, out, _ = runCLI(t, "", "rules", "--json")
	var list struct {
		Fingerprint string
		Rules       []struct {
			ID, Verdict, Mode string
			Effective         string `json:"effective_mode"`
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Fingerprint) != 16 || len(list.Rules) < 50 {
		t.Fatalf("--json: %v\n%.300s", err, out)
	}
}

// check says what the user would be shown, and the fingerprint of the rules that judged.
func TestCheckShowsWhatABlockedUserReads(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("COWORKBRIDGE_STATE_DIR", filepath.Join(dir, "state"))
	cfg := filepath.Join(dir, "managed.json")
	os.WriteFile(cfg, []byte(`{"version":1,"cowork_enabled":true,"mode":"enforce",
		"block_message":{"text":"Stopped by policy.","help_url":"https://it.example.com/{rule}"}}`), 0o644)
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", cfg)
	_, out, _ := runCLI(t, "", "check", "--bash", "rm -rf ~")
	for _, want := range []string{"shown:    Stopped by policy.", "          coworkbridge: rule bash.rm-critical",
		"          More: https://it.example.com/bash.rm-critical", "rules fingerprint "} {
		if !strings.Contains(out, want) {
			t.Errorf("check lacks %q:\n%s", want, out)
		}
	}
}
