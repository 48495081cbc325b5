package collector

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
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

var spoolBase = path.Base(session.SpoolFile)

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

// offsetKey keys a spool's position by session and file identity: a spool renamed aside keeps
// its position, a new file at the old name starts from zero.
func offsetKey(dir string, id spool.Identity) string {
	return fmt.Sprintf("%s#%d:%d", dir, id.Dev, id.Ino)
}

func offsetPrefix(dir string) string { return dir + "#" }

// drain handles everything new in one session's spool; on a housekeeping pass its rotated spools
// too, first (they are older). w.ch: the host channel's events to take too.
func (c *Collector) drain(ctx context.Context, t *tracked, w pass) {
	housekeep, ch := w.housekeep, w.ch
	p := c.pol.Load()
	now := c.opts.Now()
	s, done := t.sess.get(&c.kept, t.dir, "", now, func() *session.Session {
		s, err := session.Open(t.dir)
		if err != nil {
			c.log.Debug("cannot open session; the injector will forget it if it is gone", "session", t.id, "err", err)
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
		defer t.sess.releaseIdle(&c.kept, now) // the next pass reopens it if the session is idle
	} else {
		t.sess.touch(now)
	}
	if t.backlog == nil {
		t.backlog = backlogOf(s, t.dir)
	}
	c.checkPlants(s, t, p)
	if ch.list || len(ch.named) > 0 {
		defer c.channelPass(ctx, t, p, housekeep, ch, now)()
	}
	if housekeep {
		c.housekeep(s, t, p, now)
	}
	if housekeep {
		// Listing the folder is not needed for each event: rotated spools are found by the
		// housekeeping pass that follows every rotation, every change to one and every rescan.
		for _, name := range rotatedSpools(s) {
			c.drainFile(ctx, s, t, p, name, true)
		}
	}
	if housekeep || c.spoolMoved(s, t) {
		c.drainFile(ctx, s, t, p, session.SpoolFile, false)
	}
	if ctx.Err() == nil && (w.reconcile || !t.recon.covered || t.recon.calls.Pending()) {
		c.reconcile(s, t, p, housekeep)
	}
}

// channelPass drains the session's host channel, and sweeps it on a housekeeping pass. It
// returns what lets go of the channel once the pass is over.
func (c *Collector) channelPass(ctx context.Context, t *tracked, p *policy, housekeep bool, ch channelWork, now time.Time) (done func()) {
	cs, done := c.openChannel(t)
	if cs == nil {
		return done
	}
	// Events first: the sweep must never meet an event file still waiting.
	c.drainChannel(ctx, cs, t, p, ch)
	if housekeep {
		c.housekeepChannel(cs, t, p, now)
	}
	return done
}

// spoolMoved reports whether the session's spool may hold something not yet read: anything but a
// plain file read to its end (a new file, more bytes, fewer, a link, a second name, a line still
// waiting for its newline). One look instead of opening and reading it, for the passes that an
// event in the host channel causes; the housekeeping pass always reads it (and rotates it).
func (c *Collector) spoolMoved(s *session.Session, t *tracked) bool {
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
	key := offsetKey(t.dir, id)
	pos, ok := c.opts.Offsets.Lookup(key)
	if !ok {
		return fi.Size() > 0
	}
	return pos.Offset != fi.Size() || t.partial[key].Clear > 0
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
			b[offsetKey(dir, id)] = fi.Size()
		}
	}
	return b
}

// prepare makes our folder (never .claude itself, which is Cowork's) and writes the lease.
func (c *Collector) prepare(s *session.Session, until time.Time) {
	// Leases are written under a read lock that shutdown takes to withdraw them, so that none is
	// written after the withdrawal.
	c.leaseMu.RLock()
	defer c.leaseMu.RUnlock()
	if c.withdrawn {
		return
	}
	if fi, err := s.Lstat(session.ClaudeDir); err != nil || !fi.IsDir() {
		return // not a session yet, or going away
	}
	if wait := c.opts.Removals.Wait(s.Dir()); wait > 0 {
		// A removal is going on in the session: a folder or lease put back now would make its
		// last rmdir fail and leave a ghost session. Look again once it has settled.
		c.holdFor(s.Dir(), wait)
		return
	}
	if c.justVanished(s) {
		return
	}
	err := s.MkdirAll(session.DecisionsDir, 0o700)
	if err == nil && !s.Own() {
		err = s.MkdirAll(session.StagingDir, 0o700) // a host channel's hooks write their events in place
	}
	if err == nil {
		c.mu.Lock()
		if t := c.sessions[s.Dir()]; t != nil {
			t.prepared = true
		}
		c.mu.Unlock()
		err = decisions.WriteAlive(s, until)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.log.Warn("cannot write the alive lease; enforce hooks in this session will deny", "code", health.CodeDecisionFailed, "session", s.ID(), "err", err)
		c.opts.Health.Count(s.ID(), health.CodeDecisionFailed)
	}
}

// justVanished reports whether our folder, made in this session before, is found gone: the first
// sign of a removal whose events have not reached us yet. It is put back only after one hold of
// session.RemovalQuiet (a removal goes on meanwhile, and its events extend the hold).
func (c *Collector) justVanished(s *session.Session) bool {
	gone := false
	for _, name := range []string{session.BridgeDir, session.DecisionsDir} {
		if _, err := s.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			gone = true // a removal takes decisions/ first, then our folder (the lease is ours to replace)
		}
	}
	c.mu.Lock()
	t := c.sessions[s.Dir()]
	if t == nil { // a host channel, or a session not tracked
		c.mu.Unlock()
		return false
	}
	first := false
	switch {
	case !gone:
		t.prepared, t.bridgeGone = true, time.Time{}
	case t.prepared && t.bridgeGone.IsZero():
		t.bridgeGone, first = c.opts.Now(), true
	}
	c.mu.Unlock()
	if !first {
		return false
	}
	c.opts.Removals.Saw(s.Dir(), session.BridgeDir)
	c.holdFor(s.Dir(), session.RemovalQuiet)
	return true
}

// holdFor schedules the session's housekeeping again after wait, once however often it is held.
func (c *Collector) holdFor(dir string, wait time.Duration) {
	c.mu.Lock()
	t := c.sessions[dir]
	if t == nil || t.held {
		c.mu.Unlock()
		return
	}
	t.held = true
	c.mu.Unlock()
	time.AfterFunc(wait, func() {
		c.mu.Lock()
		t.held = false
		c.mu.Unlock()
		c.schedule(t, true)
	})
}

// housekeep renews the lease, re-adds the watch (the folder may have been recreated), and sweeps.
func (c *Collector) housekeep(s *session.Session, t *tracked, p *policy, now time.Time) {
	// A plant the watcher has not reported yet must be seen before the renewal writes over it.
	t.plants.CheckLease()
	c.checkPlants(s, t, p)
	c.prepare(s, c.leaseFor(now))
	c.watch(t)
	c.scanInstructions(s, t, p)
	res, err := decisions.Sweep(s, now, 2*p.cfg.DecisionTimeout, 2*p.cfg.HookTimeout)
	c.reportSweep(t, res, err)
	for rid, at := range t.decided {
		if now.Sub(at) > 10*time.Minute {
			delete(t.decided, rid)
		}
	}
}

// housekeepChannel renews the lease in the host channel and sweeps what hooks left there.
func (c *Collector) housekeepChannel(cs *session.Session, t *tracked, p *policy, now time.Time) {
	defer t.ch.releaseIdle(&c.kept, now) // the next pass reopens it if this was the session's last call
	c.prepare(cs, c.leaseFor(now))
	res, err := decisions.SweepChannel(cs, now, 2*p.cfg.DecisionTimeout, 2*p.cfg.HookTimeout)
	c.reportSweep(t, res, err)
}

// reportSweep logs what a sweep of the session found and counts unread decisions for health.
func (c *Collector) reportSweep(t *tracked, res decisions.SweepResult, err error) {
	if err != nil {
		c.log.Debug("sweep incomplete", "session", t.id, "err", err)
	}
	if res.Unconsumed > 0 {
		c.log.Warn("decisions were never read: their hooks gave up first", "code", health.CodeDecisionsUnconsumed, "session", t.id, "count", res.Unconsumed)
		c.opts.Health.CountN(t.id, health.CodeDecisionsUnconsumed, res.Unconsumed)
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
func (c *Collector) drainFile(ctx context.Context, s *session.Session, t *tracked, p *policy, name string, rotated bool) {
	f, err := s.OpenSole(name, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		c.refuse(t, name, err)
		if !rotated {
			c.replaceSpool(s, t, name)
		}
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		c.log.Warn("cannot examine a spool", "session", t.id, "spool", name, "err", err)
		return
	}
	id, err := spool.IdentityOf(fi)
	if err != nil {
		c.log.Error("cannot identify spool files on this platform", "err", err)
		return
	}
	key := offsetKey(t.dir, id)
	r, reset, err := spool.NewReader(f, c.opts.Offsets.Get(key), p.cfg.MaxLineBytes)
	if err != nil {
		c.refuse(t, name, err)
		return
	}
	if reset != spool.NoReset {
		c.log.Warn("spool was "+string(reset)+" since it was last read; reading it from the start", "session", t.id, "spool", name)
	}
	r.Resume(t.partial[key])
	for ctx.Err() == nil {
		more, ok := c.batch(ctx, s, t, p, r, key)
		if !ok || !more {
			break
		}
	}
	if pa := r.Partial(); pa.Clear > 0 {
		t.partial[key] = pa
	} else {
		delete(t.partial, key)
	}
	if ctx.Err() == nil {
		c.retire(s, t, f, r, key, name, rotated)
	}
}

// refuse reports a spool that is not a plain file, once per cause.
func (c *Collector) refuse(t *tracked, name string, err error) {
	if t.refused == err.Error() {
		return
	}
	t.refused = err.Error()
	c.log.Warn("refusing to read a session's spool", "code", health.CodeSpoolRefused, "session", t.id, "spool", name, "err", err)
	c.opts.Health.Count(t.id, health.CodeSpoolRefused)
}

// replaceSpool takes away what stands at the spool's name when it is not a plain file of its own
// (a link, a hard link, a FIFO, a folder): hooks in the VM would deny every call until it went. Only the agent plants
// such things there, so the session is quarantined too. A link or FIFO is removed, never
// followed or opened; a folder is moved aside whole.
func (c *Collector) replaceSpool(s *session.Session, t *tracked, name string) {
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
		err = s.MoveAside(name, name+".planted-"+strconv.FormatInt(c.opts.Now().UnixNano(), 10))
	} else {
		err = s.Remove(name)
	}
	if err != nil {
		c.log.Warn("cannot take away what was planted at a session's spool", "session", t.id, "err", err)
	}
	t.refused = "" // a new plant is reported again
	t.plants.Suspect(plants.Suspect{Rule: RulePlantedSpool, What: what})
	c.checkPlants(s, t, c.pol.Load())
}

// batch handles up to BatchLines lines: decisions as it goes, then the decision log in one write,
// then the counts and the offset. more: lines may remain. ok: false when the log write failed, in
// which case the offset stays and a retry is scheduled.
func (c *Collector) batch(ctx context.Context, s *session.Session, t *tracked, p *policy, r *spool.Reader, key string) (more, ok bool) {
	started := time.Now()
	var outs []outcome
	more = true
	limit := c.opts.BatchLines
	if t.window > 0 {
		limit = t.window
	}
	for n := 0; n < limit; n++ {
		l, err := r.Next()
		if errors.Is(err, io.EOF) {
			more = false
			break
		}
		if err != nil {
			c.log.Warn("cannot read a spool; retrying at the next change", "session", t.id, "err", err)
			more = false
			break
		}
		if !l.Oversized && len(bytes.TrimSpace(l.Data)) == 0 {
			continue // the fresh line each hook append starts with
		}
		if o := c.judge(ctx, s, t, p, l, started); !o.skip {
			o.backlog = l.End <= t.backlog[key]
			outs = append(outs, o)
		}
	}
	if !c.record(t, p, outs) {
		return false, false
	}
	if pos := r.Position(); pos != c.opts.Offsets.Get(key) {
		c.opts.Offsets.Set(key, pos)
		c.requestCommit()
	}
	return more, true
}

// record writes the outcomes to the decision log in one write and counts them. On failure it
// schedules a retry with backoff and reports false: the caller keeps the events where they are.
func (c *Collector) record(t *tracked, p *policy, outs []outcome) bool {
	now := c.opts.Now()
	if len(outs) > 0 && now.Before(t.retryAt) {
		return false // in backoff: the retry is scheduled; new events do not hasten it
	}
	saved := t.flood.Clone()
	keep, summaries, exceeded := c.admit(t, p, outs, now)
	if len(keep)+len(summaries) > 0 {
		recs := make([]telemetry.Record, 0, len(keep)+len(summaries))
		for _, o := range keep {
			recs = append(recs, o.rec)
		}
		recs = append(recs, summaries...)
		if err := c.opts.Sink.WriteBatch(recs); err != nil {
			c.opts.Health.Count("", health.CodeTelemetryFailed)
			t.failures++
			t.window = 1
			wait := min(time.Second<<min(t.failures-1, 5), 30*time.Second)
			t.retryAt = now.Add(wait)
			c.sinkFailed(err)
			time.AfterFunc(wait, func() { c.schedule(t, false) })
			t.flood = saved // the retry counts these events again
			return false
		}
		c.sinkRecovered()
	}
	t.failures, t.retryAt = 0, time.Time{}
	if t.window > 0 && len(outs) > 0 {
		if t.window *= 2; t.window >= c.opts.BatchLines {
			t.window = 0
		}
	}
	for _, o := range outs {
		c.count(t, o)
		if o.rec.RID != "" && o.bad != RuleDuplicateRID {
			t.rids.Add(o.rec.RID)
		}
	}
	if exceeded {
		c.floodQuarantine(t, p)
	}
	return true
}

// sinkState is whether the decision log is failing, so that a full disk is logged once when it
// starts and once when it ends, not once per attempt.
type sinkState struct {
	mu       sync.Mutex
	failing  bool
	since    time.Time
	attempts int
}

func (c *Collector) sinkFailed(err error) {
	c.sink.mu.Lock()
	defer c.sink.mu.Unlock()
	c.sink.attempts++
	if c.sink.failing {
		return
	}
	c.sink.failing, c.sink.since = true, c.opts.Now()
	c.log.Warn("cannot write the decision log; events stay where they are and are retried with backoff (logged again when it recovers)",
		"code", health.CodeTelemetryFailed, "err", err)
}

func (c *Collector) sinkRecovered() {
	c.sink.mu.Lock()
	defer c.sink.mu.Unlock()
	if !c.sink.failing {
		return
	}
	c.log.Info("the decision log is writable again", "failed_attempts", c.sink.attempts, "failing_for", c.opts.Now().Sub(c.sink.since).String())
	c.sink.failing, c.sink.attempts = false, 0
}

// retire rotates a drained spool that is large or idle, and removes a rotated one that is drained
// and old enough that no hook can still be appending to it.
func (c *Collector) retire(s *session.Session, t *tracked, f *os.File, r *spool.Reader, key, name string, rotated bool) {
	fi, err := f.Stat()
	if err != nil || r.Position().Offset != fi.Size() {
		return // a partial line waits for its newline
	}
	now := c.opts.Now()
	if rotated {
		at, _ := rotatedAt(path.Base(name))
		if now.Sub(at) < c.opts.RotateGrace {
			return
		}
		if err := s.Remove(name); err != nil {
			c.log.Warn("cannot remove a drained spool", "session", t.id, "spool", name, "err", err)
			return
		}
		c.opts.Offsets.Forget(key)
		delete(t.partial, key)
		c.requestCommit()
		return
	}
	if fi.Size() < c.opts.RotateBytes && (fi.Size() == 0 || now.Sub(fi.ModTime()) < c.opts.RotateIdle) {
		return
	}
	to := rotatedName(now)
	if err := s.Rename(name, to); err != nil {
		c.log.Warn("cannot rotate a spool", "session", t.id, "err", err)
		return
	}
	c.log.Debug("spool rotated", "session", t.id, "bytes", fi.Size(), "to", to)
	// Back once the grace has passed, to drain what late hooks added and remove it.
	time.AfterFunc(c.opts.RotateGrace+time.Second, func() { c.schedule(t, true) })
}
