package lane

import (
	"context"
	"errors"
	"io/fs"
	"sync"
	"time"

	"github.com/coworkbridge/coworkbridge/decisions"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// Pass handles everything new in the session: the host channel's events, the spool's lines
// (on a housekeeping pass its rotated spools too, first: they are older), and the transcripts
// when w asks or no watch covers them. It returns what it wants done beyond the session.
func (l *Lane) Pass(ctx context.Context, w Work) Result {
	l.res, l.stirred = Result{}, false
	l.pass(ctx, w)
	if w.Housekeep && ctx.Err() == nil {
		l.res.Quiet = l.quiet()
	}
	res := l.res
	l.res = Result{}
	return res
}

func (l *Lane) pass(ctx context.Context, w Work) {
	p, housekeep, ch := w.Policy, w.Housekeep, w.Channel
	l.leaseMax = w.Lease.Max
	now := l.env.Now()
	s, done := l.sess.get(&l.env.Kept, l.dir, "", now, !housekeep, func() *session.Session {
		s, err := session.Open(l.dir)
		if err != nil {
			l.env.Log.Debug("cannot open session; the injector will forget it if it is gone", "session", l.id, "err", err)
			return nil
		}
		return s
	})
	if s == nil {
		return
	}
	defer done()
	l.open = s // for a judgement that must read the transcripts first (see learnPending)
	defer func() { l.open = nil }()
	// One look at each folder per pass: a folder the agent replaces meanwhile is followed from
	// the next pass on, which the watch on the folder above, or the rescan, starts.
	defer s.Hold()()
	if housekeep {
		defer l.sess.releaseIdle(&l.env.Kept, now) // the next pass reopens it if the session is idle
	} else {
		l.sess.touch(now)
	}
	if l.spooled.backlog == nil {
		l.spooled.backlog = backlogOf(s, l.dir)
	}
	l.checkPlants(s, p)
	if ch.List || len(ch.Named) > 0 {
		defer l.channel.pass(ctx, p, w, now)()
	}
	if housekeep {
		l.housekeep(s, p, w.Lease, now)
		// Listing the folder is not needed for each event: rotated spools are found by the
		// housekeeping pass that follows every rotation, every change to one and every rescan.
		for _, name := range rotatedSpools(s, &l.spooled.noRotated) {
			l.stirred = true // removed only after a grace
			l.spooled.drain(ctx, s, p, name, true)
		}
	}
	if housekeep || l.spooled.moved(s) {
		l.spooled.drain(ctx, s, p, session.SpoolFile, false)
	}
	if ctx.Err() == nil && (w.Reconcile || !w.Covered || l.recon.calls.Pending()) {
		l.reconcile(s, p, housekeep)
	}
}

// quiet reports whether the pass just run found the session as the last one left it and
// leaves nothing to time: no line, event or transcript read, nothing found, and no grace,
// backoff, hold, quarantine or held record that a later pass must see out.
func (l *Lane) quiet() bool {
	r := &l.res
	return !l.stirred && !r.Commit && len(r.Again) == 0 && len(r.Taken) == 0 && !r.More &&
		l.quarantined() == "" && len(l.overflow) == 0 && l.failures == 0 && len(l.spooled.partial) == 0 &&
		!l.env.Now().Before(l.heldUntil) && !l.recon.calls.Pending()
}

// Prepare makes our folder in the session and in its host channel, and writes the lease to
// until, before the lane's first pass: a hook put in place right after finds the daemon vouched
// for. Each folder is opened for the call alone. It returns what it wants done, as a pass does:
// a removal going on in the session puts the lease off to a later pass.
func (l *Lane) Prepare(until time.Time) Result {
	l.res = Result{}
	defer func() { l.res = Result{} }()
	l.prepareBoth(until)
	return l.res
}

func (l *Lane) prepareBoth(until time.Time) {
	if l.channel.dir != "" {
		if cs := l.channel.fresh(); cs != nil {
			l.prepare(cs, until)
			cs.Close()
		}
	}
	if s, err := session.Open(l.dir); err == nil {
		l.prepare(s, until)
		s.Close()
	}
}

// prepare makes our folder (never .claude itself, which is Cowork's) and writes the lease, in the
// session folder or the host channel s.
func (l *Lane) prepare(s *session.Session, until time.Time) {
	// Leases are written through a gate that shutdown closes to withdraw them, so that none is
	// written after the withdrawal.
	l.env.Leases.write(func() { l.prepareOpen(s, until) })
}

func (l *Lane) prepareOpen(s *session.Session, until time.Time) {
	if fi, err := s.Lstat(session.ClaudeDir); err != nil || !fi.IsDir() {
		return // not a session yet, or going away
	}
	own := s.Dir() == l.dir
	if wait := l.env.Removals.Wait(s.Dir()); wait > 0 {
		// A removal is going on in the session: a folder or lease put back now would make its
		// last rmdir fail and leave a ghost session. Look again once it has settled.
		l.holdFor(wait)
		return
	}
	there := false // our folders, found in place by the look below
	if own {
		vanished, present := l.justVanished(s)
		if vanished {
			return
		}
		there = present
	}
	var err error
	if !there {
		err = s.MkdirAll(session.DecisionsDir, 0o700)
	}
	if err == nil && !s.Own() {
		err = s.MkdirAll(session.StagingDir, 0o700) // a host channel's hooks write their events in place
	}
	if err == nil {
		l.prepared = l.prepared || own
		var st session.Stamp
		st, err = decisions.WriteAlive(s, until)
		if own {
			l.setOwnLease(st)
		}
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		l.env.Log.Warn("cannot write the alive lease; enforce hooks in this session will deny", "code", health.CodeDecisionFailed, "session", s.ID(), "err", err)
		l.env.Health.Count(s.ID(), health.CodeDecisionFailed)
	}
}

// justVanished reports whether our folder, made in this session before, is found gone: the first
// sign of a removal whose events have not reached us yet. It is put back only after one hold of
// session.RemovalQuiet (a removal goes on meanwhile, and its events extend the hold). present
// says both our folders were found as folders: there is nothing to make.
func (l *Lane) justVanished(s *session.Session) (vanished, present bool) {
	gone := false
	present = true
	for _, name := range []string{session.BridgeDir, session.DecisionsDir} {
		fi, err := s.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			gone = true // a removal takes decisions/ first, then our folder (the lease is ours to replace)
		}
		present = present && err == nil && fi.IsDir()
	}
	first := false
	switch {
	case !gone:
		l.prepared, l.bridgeGone = true, time.Time{}
	case l.prepared && l.bridgeGone.IsZero():
		l.bridgeGone, first = l.env.Now(), true
	}
	if !first {
		return false, present
	}
	l.env.Removals.Saw(s.Dir(), session.BridgeDir)
	l.holdFor(session.RemovalQuiet)
	return true, false
}

// holdFor asks for the session's housekeeping again after wait, once however often it is held
// meanwhile.
func (l *Lane) holdFor(wait time.Duration) {
	now := l.env.Now()
	if now.Before(l.heldUntil) {
		return
	}
	l.heldUntil = now.Add(wait)
	l.again(Again{After: wait, Housekeep: true})
}

// housekeep renews the lease, asks for the watches again (the folder may have been made again),
// and sweeps.
func (l *Lane) housekeep(s *session.Session, p *Policy, lease Lease, now time.Time) {
	// A plant the watcher has not reported yet must be seen before the renewal writes over it.
	l.plants.CheckLease()
	l.checkPlants(s, p)
	l.prepare(s, lease.Until)
	l.res.Rewatch = true
	l.scanInstructions(s, p)
	res, err := decisions.Sweep(s, now, 2*p.Cfg.DecisionTimeout, 2*p.Cfg.HookTimeout, &l.swept)
	l.reportSweep(res, err)
	l.stirred = l.stirred || res.Busy() || err != nil
	for rid, at := range l.decided {
		if now.Sub(at) > 10*time.Minute {
			delete(l.decided, rid)
		}
	}
}

// reportSweep logs what a sweep of the session found and counts unread decisions for health.
func (l *Lane) reportSweep(res decisions.SweepResult, err error) {
	if err != nil {
		l.env.Log.Debug("sweep incomplete", "session", l.id, "err", err)
	}
	if res.Unconsumed > 0 {
		l.env.Log.Warn("decisions were never read: their hooks gave up first", "code", health.CodeDecisionsUnconsumed, "session", l.id, "count", res.Unconsumed)
		l.env.Health.CountN(l.id, health.CodeDecisionsUnconsumed, res.Unconsumed)
	}
}

// record writes the outcomes to the decision log in one write and counts them. On failure it
// schedules a retry with backoff and reports false: the caller keeps the events where they are.
func (l *Lane) record(p *Policy, outs []outcome) bool {
	now := l.env.Now()
	if len(outs) > 0 && now.Before(l.retryAt) {
		return false // in backoff: the retry is scheduled; new events do not hasten it
	}
	saved := l.flood.Clone()
	keep, summaries, exceeded := l.admit(p, outs, now)
	if len(keep)+len(summaries) > 0 {
		recs := make([]telemetry.Record, 0, len(keep)+len(summaries))
		for _, o := range keep {
			recs = append(recs, o.rec)
		}
		recs = append(recs, summaries...)
		if err := l.env.Sink.WriteBatch(recs); err != nil {
			l.env.Health.Count("", writeFailure(err))
			l.failures++
			l.window = 1
			wait := min(time.Second<<min(l.failures-1, 5), 30*time.Second)
			l.retryAt = now.Add(wait)
			l.env.Outage.failed(l.env, err)
			l.again(Again{After: wait, Reconcile: true, Channel: true})
			l.flood = saved // the retry counts these events again
			return false
		}
		l.env.Outage.recovered(l.env)
	}
	l.failures, l.retryAt = 0, time.Time{}
	if l.window > 0 && len(outs) > 0 {
		if l.window *= 2; l.window >= l.env.Limits.BatchLines {
			l.window = 0
		}
	}
	for _, o := range outs {
		l.count(o)
		if o.rec.RID != "" && o.bad != ruleid.DuplicateRID {
			l.rids.Add(o.rec.RID)
		}
	}
	if exceeded {
		l.floodQuarantine(p)
	}
	return true
}

// writeFailure is the health code of a failed write to the decision log.
func writeFailure(err error) health.Code {
	if errors.Is(err, telemetry.ErrLockHeld) {
		return health.CodeRecordLockHeld
	}
	return health.CodeTelemetryFailed
}

// Outage is whether the decision log is failing, so that a full disk is logged once when it
// starts and once when it ends, not once per attempt.
type Outage struct {
	mu       sync.Mutex
	failing  bool
	since    time.Time
	attempts int
}

func (o *Outage) failed(env *Env, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.attempts++
	if o.failing {
		return
	}
	o.failing, o.since = true, env.Now()
	const msg = "cannot write the decision log; events stay where they are and are retried with backoff (logged again when it recovers)"
	if errors.Is(err, telemetry.ErrLockHeld) {
		env.Log.Warn(msg, "code", health.CodeRecordLockHeld, "err", err)
		return
	}
	env.Log.Warn(msg, "code", health.CodeTelemetryFailed, "err", err)
}

func (o *Outage) recovered(env *Env) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.failing {
		return
	}
	env.Log.Info("the decision log is writable again", "failed_attempts", o.attempts, "failing_for", env.Now().Sub(o.since).String())
	o.failing, o.attempts = false, 0
}
