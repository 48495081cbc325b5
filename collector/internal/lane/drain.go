package lane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coworkbridge/coworkbridge/collector/internal/plants"
	"github.com/coworkbridge/coworkbridge/decisions"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// SpoolBase is the name of a session's spool in its bridge folder.
var SpoolBase = path.Base(session.SpoolFile)

// IsSpoolName reports whether base names a spool, current or rotated, in the bridge folder.
func IsSpoolName(base string) bool {
	return base == SpoolBase || strings.HasPrefix(base, rotatedPrefix) && strings.HasSuffix(base, ".jsonl")
}

// A rotated spool is named events.r<unix nanoseconds>.jsonl, so its age survives a restart.
const rotatedPrefix = "events.r"

func rotatedName(at time.Time) string {
	return session.BridgeDir + "/" + rotatedPrefix + strconv.FormatInt(at.UnixNano(), 10) + ".jsonl"
}

// rotatedAt parses a rotated spool's name.
func rotatedAt(base string) (time.Time, bool) {
	digits, ok := strings.CutPrefix(base, rotatedPrefix)
	if !ok {
		return time.Time{}, false
	}
	if digits, ok = strings.CutSuffix(digits, ".jsonl"); !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.Unix(0, n), true
}

// OffsetKey keys a spool's position by session and file identity: a spool renamed aside keeps
// its position, a new file at the old name starts from zero.
func OffsetKey(dir string, id spool.Identity) string {
	return fmt.Sprintf("%s#%d:%d", dir, id.Dev, id.Ino)
}

// OffsetPrefix begins the keys of everything kept for the session in folder dir in the offsets
// store.
func OffsetPrefix(dir string) string { return dir + "#" }

// Pass handles everything new in the session: the host channel's events, the spool's lines
// (on a housekeeping pass its rotated spools too, first: they are older), and the transcripts
// when w asks or no watch covers them. It returns what it wants done beyond the session.
func (l *Lane) Pass(ctx context.Context, w Work) Result {
	l.res = Result{}
	l.pass(ctx, w)
	res := l.res
	l.res = Result{}
	return res
}

func (l *Lane) pass(ctx context.Context, w Work) {
	p, housekeep, ch := w.Policy, w.Housekeep, w.Channel
	l.leaseMax = w.Lease.Max
	now := l.env.Now()
	s, done := l.sess.get(&l.env.Kept, l.dir, "", now, func() *session.Session {
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
	// One look at each folder per pass: a folder the agent replaces meanwhile is followed from
	// the next pass on, which the watch on the folder above, or the rescan, starts.
	defer s.Hold()()
	if housekeep {
		defer l.sess.releaseIdle(&l.env.Kept, now) // the next pass reopens it if the session is idle
	} else {
		l.sess.touch(now)
	}
	if l.backlog == nil {
		l.backlog = backlogOf(s, l.dir)
	}
	l.checkPlants(s, p)
	if ch.List || len(ch.Named) > 0 {
		defer l.channelPass(ctx, p, w, now)()
	}
	if housekeep {
		l.housekeep(s, p, w.Lease, now)
		// Listing the folder is not needed for each event: rotated spools are found by the
		// housekeeping pass that follows every rotation, every change to one and every rescan.
		for _, name := range rotatedSpools(s) {
			l.drainFile(ctx, s, p, name, true)
		}
	}
	if housekeep || l.spoolMoved(s) {
		l.drainFile(ctx, s, p, session.SpoolFile, false)
	}
	if ctx.Err() == nil && (w.Reconcile || !w.Covered || l.recon.calls.Pending()) {
		l.reconcile(s, p, housekeep)
	}
}

// channelPass drains the session's host channel, and sweeps it on a housekeeping pass. It
// returns what lets go of the channel once the pass is over.
func (l *Lane) channelPass(ctx context.Context, p *Policy, w Work, now time.Time) (done func()) {
	cs, done := l.openChannel()
	if cs == nil {
		return done
	}
	// Events first: the sweep must never meet an event file still waiting.
	l.drainChannel(ctx, cs, p, w.Channel)
	if w.Housekeep {
		l.housekeepChannel(cs, p, w.Lease.Until, now)
	}
	return done
}

// spoolMoved reports whether the session's spool may hold something not yet read: anything but a
// plain file read to its end (a new file, more bytes, fewer, a link, a second name, a line still
// waiting for its newline). One look instead of opening and reading it, for the passes that an
// event in the host channel causes; the housekeeping pass always reads it (and rotates it).
func (l *Lane) spoolMoved(s *session.Session) bool {
	fi, err := s.Lstat(session.SpoolFile)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil || !fi.Mode().IsRegular() || session.Links(fi) > 1 {
		return true
	}
	id, err := spool.IdentityOf(fi)
	if err != nil {
		return true
	}
	key := OffsetKey(l.dir, id)
	pos, ok := l.env.Offsets.Lookup(key)
	if !ok {
		return fi.Size() > 0
	}
	return pos.Offset != fi.Size() || l.partial[key].Clear > 0
}

// backlogOf notes how far each spool of the session reaches on the first pass since it was
// followed: what lies there was written while no daemon was, and is caught up, not counted
// against the session's budget. A spool that appears later has no backlog.
func backlogOf(s *session.Session, dir string) map[string]int64 {
	b := map[string]int64{}
	for _, name := range append(rotatedSpools(s), session.SpoolFile) {
		fi, err := s.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if id, err := spool.IdentityOf(fi); err == nil {
			b[OffsetKey(dir, id)] = fi.Size()
		}
	}
	return b
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
	if l.channel != "" {
		if cs := l.freshChannel(); cs != nil {
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
	if own && l.justVanished(s) {
		return
	}
	err := s.MkdirAll(session.DecisionsDir, 0o700)
	if err == nil && !s.Own() {
		err = s.MkdirAll(session.StagingDir, 0o700) // a host channel's hooks write their events in place
	}
	if err == nil {
		l.prepared = l.prepared || own
		err = decisions.WriteAlive(s, until)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		l.env.Log.Warn("cannot write the alive lease; enforce hooks in this session will deny", "code", health.CodeDecisionFailed, "session", s.ID(), "err", err)
		l.env.Health.Count(s.ID(), health.CodeDecisionFailed)
	}
}

// justVanished reports whether our folder, made in this session before, is found gone: the first
// sign of a removal whose events have not reached us yet. It is put back only after one hold of
// session.RemovalQuiet (a removal goes on meanwhile, and its events extend the hold).
func (l *Lane) justVanished(s *session.Session) bool {
	gone := false
	for _, name := range []string{session.BridgeDir, session.DecisionsDir} {
		if _, err := s.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			gone = true // a removal takes decisions/ first, then our folder (the lease is ours to replace)
		}
	}
	first := false
	switch {
	case !gone:
		l.prepared, l.bridgeGone = true, time.Time{}
	case l.prepared && l.bridgeGone.IsZero():
		l.bridgeGone, first = l.env.Now(), true
	}
	if !first {
		return false
	}
	l.env.Removals.Saw(s.Dir(), session.BridgeDir)
	l.holdFor(session.RemovalQuiet)
	return true
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
	res, err := decisions.Sweep(s, now, 2*p.Cfg.DecisionTimeout, 2*p.Cfg.HookTimeout)
	l.reportSweep(res, err)
	for rid, at := range l.decided {
		if now.Sub(at) > 10*time.Minute {
			delete(l.decided, rid)
		}
	}
}

// housekeepChannel renews the lease in the host channel and sweeps what hooks left there.
func (l *Lane) housekeepChannel(cs *session.Session, p *Policy, until, now time.Time) {
	defer l.ch.releaseIdle(&l.env.Kept, now) // the next pass reopens it if this was the session's last call
	l.prepare(cs, until)
	res, err := decisions.SweepChannel(cs, now, 2*p.Cfg.DecisionTimeout, 2*p.Cfg.HookTimeout)
	l.reportSweep(res, err)
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

// rotatedSpools lists the session's rotated spools, oldest first.
func rotatedSpools(s *session.Session) []string {
	entries, err := s.ReadDir(session.BridgeDir, 10000)
	if err != nil && len(entries) == 0 {
		return nil
	}
	var names []string
	for _, e := range entries {
		if _, ok := rotatedAt(e.Name()); ok {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		ta, _ := rotatedAt(a)
		tb, _ := rotatedAt(b)
		return ta.Compare(tb)
	})
	for i, n := range names {
		names[i] = session.BridgeDir + "/" + n
	}
	return names
}

// drainFile handles the complete lines of one spool from its committed position, then rotates
// it or, for a rotated one, removes it once nothing more can arrive.
func (l *Lane) drainFile(ctx context.Context, s *session.Session, p *Policy, name string, rotated bool) {
	f, err := s.OpenSole(name, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		l.refuse(name, err)
		if !rotated {
			l.replaceSpool(s, p, name)
		}
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		l.env.Log.Warn("cannot examine a spool", "session", l.id, "spool", name, "err", err)
		return
	}
	id, err := spool.IdentityOf(fi)
	if err != nil {
		l.env.Log.Error("cannot identify spool files on this platform", "err", err)
		return
	}
	key := OffsetKey(l.dir, id)
	r, reset, err := spool.NewReader(f, l.env.Offsets.Get(key), p.Cfg.MaxLineBytes)
	if err != nil {
		l.refuse(name, err)
		return
	}
	if reset != spool.NoReset {
		l.env.Log.Warn("spool was "+string(reset)+" since it was last read; reading it from the start", "session", l.id, "spool", name)
	}
	r.Resume(l.partial[key])
	for ctx.Err() == nil {
		more, ok := l.batch(ctx, s, p, r, key)
		if !ok || !more {
			break
		}
	}
	if pa := r.Partial(); pa.Clear > 0 {
		l.partial[key] = pa
	} else {
		delete(l.partial, key)
	}
	if ctx.Err() == nil {
		l.retire(s, f, r, key, name, rotated)
	}
}

// refuse reports a spool that is not a plain file, once per cause.
func (l *Lane) refuse(name string, err error) {
	if l.refused == err.Error() {
		return
	}
	l.refused = err.Error()
	l.env.Log.Warn("refusing to read a session's spool", "code", health.CodeSpoolRefused, "session", l.id, "spool", name, "err", err)
	l.env.Health.Count(l.id, health.CodeSpoolRefused)
}

// replaceSpool takes away what stands at the spool's name when it is not a plain file of its own
// (a link, a hard link, a FIFO, a folder): hooks in the VM would deny every call until it went. Only the agent plants
// such things there, so the session is quarantined too. A link or FIFO is removed, never
// followed or opened; a folder is moved aside whole.
func (l *Lane) replaceSpool(s *session.Session, p *Policy, name string) {
	fi, err := s.Lstat(name)
	linked := err == nil && fi.Mode().IsRegular() && session.Links(fi) > 1
	if err != nil || fi.Mode().IsRegular() && !linked {
		return
	}
	what := fmt.Sprintf("the spool was replaced by a %v", fi.Mode().Type())
	if linked {
		// Removing the name leaves the other file as it was; its lines were never read.
		what = "the spool was replaced by a hard link to another file"
	}
	if fi.IsDir() {
		err = s.MoveAside(name, name+".planted-"+strconv.FormatInt(l.env.Now().UnixNano(), 10))
	} else {
		err = s.Remove(name)
	}
	if err != nil {
		l.env.Log.Warn("cannot take away what was planted at a session's spool", "session", l.id, "err", err)
	}
	l.refused = "" // a new plant is reported again
	l.plants.Suspect(plants.Suspect{Rule: ruleid.PlantedSpool, What: what})
	l.checkPlants(s, p)
}

// batch handles up to BatchLines lines: decisions as it goes, then the decision log in one write,
// then the counts and the offset. more: lines may remain. ok: false when the log write failed, in
// which case the offset stays and a retry is scheduled.
func (l *Lane) batch(ctx context.Context, s *session.Session, p *Policy, r *spool.Reader, key string) (more, ok bool) {
	started := time.Now()
	var outs []outcome
	more = true
	limit := l.env.Limits.BatchLines
	if l.window > 0 {
		limit = l.window
	}
	for n := 0; n < limit; n++ {
		line, err := r.Next()
		if errors.Is(err, io.EOF) {
			more = false
			break
		}
		if err != nil {
			l.env.Log.Warn("cannot read a spool; retrying at the next change", "session", l.id, "err", err)
			more = false
			break
		}
		if !line.Oversized && len(bytes.TrimSpace(line.Data)) == 0 {
			continue // the fresh line each hook append starts with
		}
		if o := l.judge(ctx, source{s, judgement.Spool}, p, line, started); !o.skip {
			o.backlog = line.End <= l.backlog[key]
			outs = append(outs, o)
		}
	}
	if !l.record(p, outs) {
		return false, false
	}
	if pos := r.Position(); pos != l.env.Offsets.Get(key) {
		l.env.Offsets.Set(key, pos)
		l.res.Commit = true
	}
	return more, true
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

// retire rotates a drained spool that is large or idle, and removes a rotated one that is drained
// and old enough that no hook can still be appending to it.
func (l *Lane) retire(s *session.Session, f *os.File, r *spool.Reader, key, name string, rotated bool) {
	fi, err := f.Stat()
	if err != nil || r.Position().Offset != fi.Size() {
		return // a partial line waits for its newline
	}
	now := l.env.Now()
	if rotated {
		at, _ := rotatedAt(path.Base(name))
		if now.Sub(at) < l.env.Limits.RotateGrace {
			return
		}
		if err := s.Remove(name); err != nil {
			l.env.Log.Warn("cannot remove a drained spool", "session", l.id, "spool", name, "err", err)
			return
		}
		l.env.Offsets.Forget(key)
		delete(l.partial, key)
		l.res.Commit = true
		return
	}
	if fi.Size() < l.env.Limits.RotateBytes && (fi.Size() == 0 || now.Sub(fi.ModTime()) < l.env.Limits.RotateIdle) {
		return
	}
	to := rotatedName(now)
	if err := s.Rename(name, to); err != nil {
		l.env.Log.Warn("cannot rotate a spool", "session", l.id, "err", err)
		return
	}
	l.env.Log.Debug("spool rotated", "session", l.id, "bytes", fi.Size(), "to", to)
	// Back once the grace has passed, to drain what late hooks added and remove it.
	l.again(Again{After: l.env.Limits.RotateGrace + time.Second, Housekeep: true})
}
