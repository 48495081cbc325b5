package lane

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// On the Mac (Cowork's host loop) Claude Code runs the managed tier's hooks before the session's
// own, and the drop-in's hook leaves a receipt of every call it sees, judged or left to the
// session's hook. A call that reaches the session's hook through the host channel with no such
// receipt was never shown to the drop-in: something else holds the managed tier. Claude Code
// puts the organisation's server-managed settings, or a cached copy of them, in place of every
// endpoint-managed file (verified with CLI 2.1.332, docs/CLAUDE-CODE-FACTS.md).

// tierGrace is how long a call waits for the drop-in's receipt: in system mode it comes from
// root over the worker's link, not as a file written before the session's hook started.
const tierGrace = 2 * time.Second

// Bounds of what the watch keeps: the calls of a burst, never the session's history.
const (
	tierSeenMax    = 256
	tierWaitingMax = 64
	tierSeenFor    = 2 * time.Minute
	// tierReportEvery: a session whose drop-in stays out is recorded once in this time; health
	// counts every call.
	tierReportEvery = time.Hour
)

// tierCall is a call of the host channel awaiting the drop-in's receipt.
type tierCall struct {
	tool string
	at   time.Time
}

// tier watches, for one session, whether its calls on the Mac reach the drop-in.
type tier struct {
	seen     map[string]time.Time // tool_use_ids the drop-in's hook saw
	waiting  map[string]tierCall  // host-channel calls not yet matched
	reported time.Time
}

// saw notes a receipt of the drop-in's hook.
func (t *tier) saw(id string, now time.Time) {
	if id == "" {
		return
	}
	if t.seen == nil {
		t.seen = map[string]time.Time{}
	}
	if len(t.seen) >= tierSeenMax {
		t.expire(now)
		if len(t.seen) >= tierSeenMax {
			return // a flood of receipts: the calls they stand for stay unmatched, and are reported
		}
	}
	t.seen[id] = now
}

// hostCall notes a call the session's hook handed over in the host channel.
func (t *tier) hostCall(id, tool string, now time.Time) {
	if id == "" {
		return
	}
	if t.waiting == nil {
		t.waiting = map[string]tierCall{}
	}
	if len(t.waiting) < tierWaitingMax {
		t.waiting[id] = tierCall{tool: tool, at: now}
	}
}

func (t *tier) expire(now time.Time) {
	for id, at := range t.seen {
		if now.Sub(at) > tierSeenFor {
			delete(t.seen, id)
		}
	}
}

// settle matches the waiting calls with the receipts: it returns those the drop-in never saw
// within the grace, and how long until the next one is due (0: none waits).
func (t *tier) settle(now time.Time) (missed []string, tool string, next time.Duration) {
	for id, c := range t.waiting {
		switch _, ok := t.seen[id]; {
		case ok:
			delete(t.waiting, id)
		case now.Sub(c.at) >= tierGrace:
			missed, tool = append(missed, id), c.tool
			delete(t.waiting, id)
		default:
			if due := tierGrace - now.Sub(c.at); next == 0 || due < next {
				next = due
			}
		}
	}
	t.expire(now)
	return missed, tool, next
}

// checkTier reports the session's calls on the Mac that the drop-in never saw, when a drop-in
// is installed: health counts each, and the decision log has one record an hour naming the
// likely cause.
func (l *Lane) checkTier(s *session.Session, p *Policy, now time.Time) {
	missed, tool, next := l.tier.settle(now)
	if next > 0 {
		l.again(Again{After: next, Reconcile: true})
	}
	if len(missed) == 0 || l.env.DropIn == nil || !l.env.DropIn() {
		return
	}
	l.env.Health.CountN(l.id, health.CodeDropInOverridden, len(missed))
	if now.Sub(l.tier.reported) < tierReportEvery {
		return
	}
	l.tier.reported = now
	why := "tool call " + missed[0] + " reached this session's own hook, but the managed-settings drop-in's hook, which Claude Code runs first, never saw it: the drop-in (and lockdown) is not in force in this session; " + tierCause(s)
	l.env.Log.Warn("a session's calls on the Mac do not reach the managed-settings drop-in", "code", health.CodeDropInOverridden, "session", l.id, "tool_use_id", missed[0], "calls", len(missed), "why", why)
	input, _ := json.Marshal(map[string]any{"tool_use_ids": missed})
	rec := judgement.Finding(now, l.id, "", p.Cfg.Mode, tool, input, ruleid.DropInOverridden, why)
	if err := l.env.Sink.WriteBatch([]telemetry.Record{rec}); err != nil {
		l.env.Health.Count("", health.CodeTelemetryFailed)
		l.env.Log.Warn("cannot record that the drop-in is not in force", "code", health.CodeTelemetryFailed, "session", l.id, "err", err)
	}
}

// tierCause names what most likely holds the managed tier: a cache of server-managed settings
// in the session's configuration folder (there, or held by the daemon since the CLI read it),
// else the organisation's console.
func tierCause(s *session.Session) string {
	const cache = "remote-settings.json"
	if s != nil {
		if fi, err := s.Lstat(session.ClaudeDir + "/" + cache); err == nil && fi.Mode().IsRegular() {
			return "the session's configuration folder holds a cached copy of server-managed settings (.claude/" + cache + "), which Claude Code uses in place of the drop-in when its fetch fails"
		}
		names, _ := s.ReadDirNames(session.HeldDir, 1024)
		for _, n := range names {
			if strings.Contains(n, cache) {
				return "a cached copy of server-managed settings was planted in the session's configuration folder (held by coworkbridge as " + session.HeldDir + "/" + n + ", but Claude Code had read it as it started)"
			}
		}
	}
	return "most likely the organisation's server-managed settings (Claude.ai admin console), which Claude Code puts in place of every endpoint-managed file; put coworkbridge's hook there (coworkbridge console-settings)"
}
