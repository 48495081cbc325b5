package lane

import (
	"sync"
	"time"

	"github.com/coworkbridge/coworkbridge/decisions"
	"github.com/coworkbridge/coworkbridge/health"
)

// quarantine is the period during which every call of the session is denied. The lane sets it
// on what its pass finds, the scheduler on what the injector finds, hence its lock.
type quarantine struct {
	mu    sync.Mutex
	until time.Time
	why   string
}

// Quarantine denies every further call in the session for QuarantineFor from now: something in
// it tried to switch the guard off or fool it. Each new attempt starts the period again, so the
// quarantine lifts only once the daemon has repaired the session and the attempts have stopped.
// It is safe to call while a pass runs: the pass's next call is denied.
func (l *Lane) Quarantine(reason string) {
	until := l.env.Now().Add(l.env.Limits.QuarantineFor)
	l.q.mu.Lock()
	l.q.until, l.q.why = until, reason
	l.q.mu.Unlock()
	Quarantined(l.env, l.id, reason, until)
	l.tellHostHook(until, reason)
}

// Quarantined logs and reports a quarantine; for a session with no lane, it is all there is.
func Quarantined(env *Env, id, reason string, until time.Time) {
	env.Log.Warn("session quarantined: every tool call in it is denied", "code", health.CodeSessionQuarantined, "session", id, "reason", reason, "until", until.Format(time.RFC3339))
	env.Health.Quarantined(id, reason, until)
}

// quarantined returns why the session is quarantined now, "" when it is not.
func (l *Lane) quarantined() string {
	l.q.mu.Lock()
	defer l.q.mu.Unlock()
	if l.env.Now().Before(l.q.until) {
		return l.q.why
	}
	return ""
}

// tellHostHook writes the quarantine into the session's host channel, where the host hook reads
// it: under lockdown it, not the session's own hook, answers every call on the Mac.
func (l *Lane) tellHostHook(until time.Time, reason string) {
	if l.channel.dir == "" {
		return
	}
	s := l.channel.fresh()
	if s == nil {
		return // freshChannel said why
	}
	defer s.Close()
	if err := decisions.WriteQuarantine(s, until, reason); err != nil {
		l.env.Log.Warn("cannot tell the host hook of a quarantine; under lockdown the session's calls on the Mac are judged one by one", "code", health.CodeDecisionFailed, "session", l.id, "err", err)
	}
}

// QuarantinedNow is quarantined for a caller outside the pass (a system-mode daemon judging a
// host call of the session): safe at any time.
func (l *Lane) QuarantinedNow() string { return l.quarantined() }
