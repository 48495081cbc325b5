package hosthook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// The agent makes a link in its outputs from the VM (ln -s to the Mac path of the host channel)
// and then writes through it with the Write tool, which runs on the Mac and follows the link:
// the call is judged as the Mac resolves it, and denied.
func TestAWriteThroughALinkIsJudgedWhereTheLinkLeads(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	roots := filepath.Join(dir, "sessions")
	own := filepath.Join(roots, "o", "o", "local_a")
	channel := filepath.Join(state, "channel", "local_a")
	for _, d := range []string{channel, filepath.Join(own, "outputs"), filepath.Join(own, ".claude")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(channel, filepath.Join(own, "outputs", "notes")); err != nil {
		t.Fatal(err)
	}
	cls, err := classifier.New(classifier.Policy{Places: []classifier.Place{
		{Path: state, Owner: classifier.OwnerGuard, What: "coworkbridge's state and host channels"},
		{Path: roots, Owner: classifier.OwnerSessions, What: "Cowork's sessions"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	write := func(path string) claudehook.Payload {
		in, _ := json.Marshal(map[string]string{"file_path": path, "content": `{"forged":true}`})
		return claudehook.Payload{ToolName: "Write", ToolInput: in, Cwd: filepath.Join(own, "outputs")}
	}
	if got := ownSession(filepath.Join(own, ".claude"), []string{roots}); got != own {
		t.Fatalf("ownSession = %q, want %q", got, own)
	}
	judge := func(p claudehook.Payload) classifier.Verdict {
		return judgeFor(managedconfig.Config{}, cls, nil, "").Decide(context.Background(), judgement.Call{Door: judgement.Hook, Payload: p, Own: own}).Verdict
	}
	v := judge(write(filepath.Join(own, "outputs", "notes", "events.jsonl")))
	if v.Decision != claudehook.Deny || v.RuleID != "path.guard-files" {
		t.Errorf("a write through the link: %s %s (%s), want deny path.guard-files", v.Decision, v.RuleID, v.Reason)
	}
	v = judge(write(filepath.Join(own, "outputs", "report.md")))
	if v.Decision != claudehook.Allow {
		t.Errorf("a write of the session's own report: %s %s (%s), want allow", v.Decision, v.RuleID, v.Reason)
	}
}

// A CLAUDE_CONFIG_DIR that is not a session's .claude folder gives no session of its own.
func TestOwnSessionIsOnlyASessionsClaudeFolder(t *testing.T) {
	roots := []string{"/r"}
	for _, dir := range []string{"", "relative/.claude", "/r/o/o/local_a", "/r/o/.claude", "/elsewhere/local_a/.claude"} {
		if got := ownSession(dir, roots); got != "" {
			t.Errorf("ownSession(%q) = %q, want none", dir, got)
		}
	}
}
