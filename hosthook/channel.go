package hosthook

import (
	"encoding/json"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/decisions"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
)

// channel is the host channel of the Cowork session a call comes from, when the daemon keeps
// one: the session is named by CLAUDE_CONFIG_DIR (a session's .claude under a sessions root), and
// the channel must already exist (the daemon makes it; the hook makes no folder of the daemon's).
func channel(env managedconfig.Env, cfg managedconfig.Config, root string) *session.Session {
	if root == "" {
		return nil
	}
	p, ok := sessionOfConfigDir(getenv(env, "CLAUDE_CONFIG_DIR"), cfg.SessionsRoots)
	if !ok {
		return nil
	}
	s, err := session.OpenOwn(session.ChannelDir(root, p.ID()))
	if err != nil {
		return nil
	}
	return s
}

// quarantined says why the session of ch is quarantined now, "" when it is not. A quarantine
// file the hook cannot read counts as a quarantine: the file is the daemon's, and only an attempt
// on it makes it unreadable.
func quarantined(ch *session.Session, now time.Time) string {
	if ch == nil {
		return ""
	}
	until, why, err := decisions.ReadQuarantine(ch)
	switch {
	case err != nil:
		return "its quarantine could not be read (" + err.Error() + ")"
	case now.Before(until):
		return why
	}
	return ""
}

// leaveReceipt tells the daemon this hook judged the call, so that reconciliation counts it as
// guarded. A receipt that cannot be written costs a false unguarded-call finding, never the call.
func leaveReceipt(ch *session.Session, r claudehook.Receipt) {
	data, err := json.Marshal(r)
	if err != nil {
		return
	}
	_ = ch.MkdirAll(session.ReceiptsDir, 0o700)
	_ = ch.Publish(session.ReceiptsDir+"/"+newRID()+".json", data, 0o600)
}

// standAside leaves the receipt of a call this hook left to the session's own hook: the daemon
// then knows the drop-in is in force there. A call that reaches the session's hook with no such
// receipt means something else took the managed tier (server-managed settings, or a cached copy
// of them). Nothing is left for a payload it cannot read: the session's hook reports that one.
func standAside(env managedconfig.Env, cfg managedconfig.Config, root string, data []byte) {
	p, err := claudehook.ParsePayload(data)
	if err != nil || p.ToolUseID == "" {
		return
	}
	ch := channel(env, cfg, root)
	if ch == nil {
		return
	}
	defer ch.Close()
	leaveReceipt(ch, claudehook.Receipt{V: 1, ToolUseID: p.ToolUseID, Tool: p.ToolName, Aside: true, Fingerprint: map[string]uint64{}})
}
