package collector

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// The daemon tells a denied or asked hook the admin's notice around its reason, and an allowed
// one nothing of it; the record keeps what check would show.
func TestAWaitingHookIsToldTheAdminsNoticeForItsRule(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	f.cfg.Policy.Notices = managedconfig.Notices{
		Default: managedconfig.Notice{Text: "Stopped by Example Corp's AI policy.", HelpURL: "https://it.example.com/ai/{rule}?on={host}"},
		Rules:   map[string]managedconfig.Notice{"bash.rm-critical": {Text: "Never delete a home folder."}},
	}
	f.opts.Host = "mac-17"
	f.start()
	reason := func(rid string) string {
		var o struct {
			H struct {
				R string `json:"permissionDecisionReason"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal([]byte(f.decision(rid)), &o); err != nil {
			t.Fatal(err)
		}
		return o.H.R
	}
	deny := f.nextRID()
	f.appendRaw(envelope(deny, "enforce", "Bash", bash("rm -rf ~")) + "\n")
	got := strings.Split(reason(deny), "\n")
	if len(got) != 3 || got[0] != "Never delete a home folder." || !strings.HasPrefix(got[1], "coworkbridge: ") ||
		got[2] != "More: https://it.example.com/ai/bash.rm-critical?on=mac-17" {
		t.Errorf("deny reason %q", got)
	}
	ask := f.nextRID()
	f.appendRaw(envelope(ask, "enforce", "Bash", bash("git restore src/main.go")) + "\n")
	// block_message's default text is for calls that were stopped: an ask, which the user may
	// let through, gets coworkbridge's reason and the help page.
	if got := reason(ask); !strings.HasPrefix(got, "coworkbridge: ") || !strings.HasSuffix(got, "\nMore: https://it.example.com/ai/bash.git-discard?on=mac-17") {
		t.Errorf("ask reason %q: want the reason and the help page, without the block text", got)
	}
	allow := f.nextRID()
	f.appendRaw(envelope(allow, "enforce", "Bash", bash("ls")) + "\n")
	if out := f.decision(allow); strings.Contains(out, "Example Corp") {
		t.Errorf("an allow carries the notice: %s", out)
	}
	recs := f.waitRecords(3)
	if recs[0].Matched != "rm -rf ~" || len(recs[0].Effects) == 0 || recs[0].Nudge == "" {
		t.Errorf("the deny's record does not explain it: %+v", recs[0])
	}
	if recs[2].Matched != "" || recs[2].Effects != nil {
		t.Errorf("an allow's record carries an explanation: %+v", recs[2])
	}
}
