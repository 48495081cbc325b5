package classifier

import (
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

func TestCatalogListsEveryRuleWithItsModeSourceAndDoc(t *testing.T) {
	org := RuleFile{Name: "/org/org-bash.rules", Data: []byte(`# A comment kept apart by a blank line is the file's, not a rule's.

# Deploys go through the pipeline,
# never from a laptop.
block "org.deploy"
  match ^kubectl apply
  unless --dry-run
  nudge "Open a pull request instead."
suspicious "org.curl"
  match ^curl
`)}
	c, err := New(Policy{RuleFiles: []RuleFile{org}, DisabledRules: []string{"bash.git-push-force"}, RuleModes: map[string]string{"org.curl": "observe"}})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]RuleInfo{}
	for _, r := range c.Catalog() {
		byID[r.ID] = r
	}
	if len(byID) < 50 {
		t.Fatalf("%d rules in the catalog, want the built-in ones too", len(byID))
	}
	deploy := byID["org.deploy"]
	if deploy.Verdict != claudehook.Deny || deploy.Target != TargetBash || deploy.File != "/org/org-bash.rules" || deploy.Line != 5 ||
		deploy.Doc != "Deploys go through the pipeline, never from a laptop." || deploy.Mode != "" ||
		len(deploy.Matches) != 1 || deploy.Matches[0] != "pattern ^kubectl apply" || len(deploy.Unless) != 1 || deploy.Nudge == "" {
		t.Errorf("org.deploy = %+v", deploy)
	}
	if curl := byID["org.curl"]; curl.Verdict != claudehook.Ask || curl.Mode != "observe" || curl.Doc != "" {
		t.Errorf("org.curl = %+v", curl)
	}
	if push, ok := byID["bash.git-push-force"]; !ok || push.Mode != ModeDisabled || !strings.HasPrefix(push.File, "default/") {
		t.Errorf("a disabled rule is listed as disabled: %+v", push)
	}
	if v := byID["bash.rm-critical"]; len(v.Matches) != 1 || v.Matches[0] != "validator RecursiveDeleteCritical" {
		t.Errorf("a validator rule says its validator: %+v", v)
	}
}

func TestFingerprintFollowsWhatDecidesNotHowItIsWritten(t *testing.T) {
	rules := func(s string) []RuleFile { return []RuleFile{{Name: "/org/org-bash.rules", Data: []byte(s)}} }
	fp := func(p Policy) string {
		t.Helper()
		c, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		return c.Fingerprint()
	}
	base := Policy{RuleFiles: rules("block \"org.x\"\n  match ^x\n"), DisabledRules: []string{"bash.fork-bomb", "bash.dd-device"}}
	same := Policy{RuleFiles: rules("block \"org.x\"\n  match ^x\n"), DisabledRules: []string{"bash.dd-device", "bash.fork-bomb"}}
	if fp(base) != fp(same) {
		t.Error("the order of disabled_rules changed the fingerprint")
	}
	for name, p := range map[string]Policy{
		"a rule file's content": {RuleFiles: rules("block \"org.x\"\n  match ^y\n"), DisabledRules: base.DisabledRules},
		"a rule switched on":    {RuleFiles: base.RuleFiles, DisabledRules: []string{"bash.fork-bomb"}},
		"a rule's mode":         {RuleFiles: base.RuleFiles, DisabledRules: base.DisabledRules, RuleModes: map[string]string{"org.x": "observe"}},
		"an allowed program":    {RuleFiles: base.RuleFiles, DisabledRules: base.DisabledRules, AllowedExecutables: []string{"terraform"}},
		"servers restricted":    {RuleFiles: base.RuleFiles, DisabledRules: base.DisabledRules, RestrictMCPServers: true},
	} {
		if fp(p) == fp(base) {
			t.Errorf("%s changed and the fingerprint did not", name)
		}
	}
}
