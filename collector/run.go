package collector

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/collector/internal/instructions"
	"github.com/coworkbridge/coworkbridge/collector/internal/lane"
	"github.com/coworkbridge/coworkbridge/decisions"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"github.com/coworkbridge/coworkbridge/internal/metronome"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/transcript"
)

// Run follows the tracked sessions until ctx is done, then withdraws every alive lease (so that
// enforce hooks deny at once while the daemon is down) and commits the offsets. It returns nil
// on cancel; a watcher that cannot start is logged and the rescan carries on alone.
func (c *Collector) Run(ctx context.Context) error {
	w, watching := fswatch.Nop(), false
	if c.opts.Poll == 0 {
		var err error
		if w, err = c.opts.Watcher(); err != nil {
			c.log.Error("cannot start the spool watcher; spools are drained at each rescan only", "err", err)
			w = fswatch.Nop()
		}
		watching = err == nil
	}
	defer w.Close()
	c.mu.Lock()
	c.w, c.watching = w, watching
	c.mu.Unlock()
	var workers sync.WaitGroup
	for range c.opts.Workers {
		workers.Go(func() { c.work(ctx) })
	}
	commitDone := make(chan struct{})
	var committer sync.WaitGroup
	committer.Go(func() { c.commitLoop(commitDone) })

	c.mu.Lock()
	all := c.trackedLocked()
	c.mu.Unlock()
	for _, e := range all {
		c.watch(e)
	}
	c.scheduleAll(true)

	rescan := c.opts.Beat.Ticker(c.rescanEvery())
	defer rescan.Stop()
	var lease *metronome.Ticker
	var leaseC <-chan time.Time
	if !c.opts.ClockTold {
		lease = c.opts.Beat.Ticker(c.leaseCheckEvery())
		defer lease.Stop()
		leaseC = lease.C
	}
	for {
		select {
		case <-ctx.Done():
			c.shutdown(&workers)
			close(commitDone)
			committer.Wait()
			c.flush()
			return nil
		case ev := <-w.Events():
			c.handle(ev)
		case err := <-w.Errors():
			// Typically a queue overflow: events were lost, so look everywhere.
			c.log.Warn("spool watcher error; draining every session", "err", err)
			c.scheduleAll(false)
		case <-rescan.C:
			c.rescan()
			c.renewDue() // a clock that ran ahead unseen: the net, as the rescan is the watcher's
		case <-leaseC:
			c.renewDue()
		case <-c.reconf:
			rescan.Reset(c.rescanEvery())
			if lease != nil {
				lease.Reset(c.leaseCheckEvery())
			}
		}
	}
}

// rescanEvery is the safety net's period: the configured rescan, or Poll when polling is the
// design under test.
func (c *Collector) rescanEvery() time.Duration {
	if c.opts.Poll > 0 {
		return c.opts.Poll
	}
	return c.pol.Load().Cfg.RescanInterval
}

func (c *Collector) leaseCheckEvery() time.Duration { return LeaseCheckEvery(c.rescanEvery()) }

// LeaseCheckEvery is how often the wall clock is compared with the leases when the rescan
// interval is rescan: after a Mac wakes from sleep, timers lag the clock, and leases must not lapse under
// sessions that are in use. Half a rescan, from 5 to 15 s: each check wakes the process, and
// with a hundred users' idle workers those wake-ups cost more than their sessions (a lease runs
// at least two rescans past its session's next housekeeping, and a check renews every lease due
// within a rescan).
func LeaseCheckEvery(rescan time.Duration) time.Duration {
	return min(max(rescan/2, 5*time.Second), 15*time.Second)
}

// leaseLength is how far ahead a lease vouches when its session may next be housekept in rests
// rescans: to that housekeeping and two rescans more, so that a late tick never lets it lapse,
// and at least 15 s.
func (c *Collector) leaseLength(rests int) time.Duration {
	return max(time.Duration(rests+2)*c.pol.Load().Cfg.RescanInterval, 15*time.Second)
}

// leaseFor returns the time a lease written now runs to, for a session whose next housekeeping
// may be rests rescans away, and remembers it.
func (c *Collector) leaseFor(now time.Time, rests int) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leaseForLocked(now, rests)
}

// leaseForLocked is leaseFor for callers that hold mu.
func (c *Collector) leaseForLocked(now time.Time, rests int) time.Time {
	until := now.Add(c.leaseLength(rests))
	if until.After(c.leaseUntil) {
		c.leaseUntil = until
	}
	return until
}

// watch adds the session's folders of ours to the watcher; it is idempotent. A folder found with
// the stamp it had when its watch was added is that folder, unchanged since (a new folder, even
// on a reused inode, has another change time), and still watched: it is not walked and added
// again, which was a sixth of what an idle session cost at each rescan.
func (c *Collector) watch(e *entry) {
	e.watching.Lock()
	defer e.watching.Unlock()
	c.mu.Lock()
	w := c.w // taken under e.watching: a call after Run's own sees the watcher Run set
	c.mu.Unlock()
	if e.chBridge != "" && !c.stillWatched(e, e.chBridge) {
		err := w.Add(e.chBridge) // our own state: nothing in it is planted
		if err != nil {
			c.log.Debug("cannot watch a session's host channel; the rescan covers it", "session", e.id, "err", err)
		} else if fi, err := os.Lstat(e.chBridge); err == nil {
			c.watchedAs(e, e.chBridge, fi)
		}
	}
	claude := filepath.Dir(e.bridge)
	for _, dir := range []string{claude, e.bridge, filepath.Join(e.bridge, "decisions")} {
		if c.stillWatched(e, dir) {
			continue
		}
		// A link at any step is refused, never watched through, even one swapped in meanwhile.
		fi, err := fswatch.AddInside(w, e.dir, dir)
		if err != nil {
			c.log.Debug("cannot watch a session's folder of ours; the rescan covers it", "session", e.id, "dir", dir, "err", err)
		} else {
			c.watchedAs(e, dir, fi)
		}
		if dir == claude {
			c.mu.Lock()
			e.claudeWatched = err == nil
			c.mu.Unlock()
		}
	}
}

// stillWatched reports whether the folder at dir is the one watched for e, unchanged since.
func (c *Collector) stillWatched(e *entry, dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	was, ok := e.watchedStamps[dir]
	return ok && was == session.StampOf(fi)
}

// watchedAs notes the folder a watch was added on for e.
func (c *Collector) watchedAs(e *entry, dir string, fi fs.FileInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.watchedStamps == nil {
		e.watchedStamps = map[string]session.Stamp{}
	}
	e.watchedStamps[dir] = session.StampOf(fi)
}

// maxTranscriptDirs bounds the transcript folders watched per session; past it the rate-limited
// reads at each drain and the rescan cover the rest.
const maxTranscriptDirs = 16

// watchTranscripts watches the folders that hold the session's transcripts, so that a line the
// CLI writes is read within seconds, not at the next rescan. It reports whether the watches
// cover them all, and .claude where new ones are made: then only a change they report, or a
// rescan, needs the transcripts read again.
func (c *Collector) watchTranscripts(e *entry, dirs []string) (covered bool) {
	c.mu.Lock()
	w := c.w
	covered = e.claudeWatched && !e.gone
	var add []string
	for _, d := range dirs {
		abs := filepath.Join(e.dir, filepath.FromSlash(d))
		switch {
		case e.tdirs[abs]:
			continue
		case len(e.tdirs) >= maxTranscriptDirs || e.gone:
			covered = false
			continue
		}
		if e.tdirs == nil {
			e.tdirs = map[string]bool{}
		}
		e.tdirs[abs] = true
		c.byBridge[abs] = e
		add = append(add, abs)
	}
	c.mu.Unlock()
	added := 0
	for _, abs := range add {
		if _, err := fswatch.AddInside(w, e.dir, abs); err != nil {
			c.log.Debug("cannot watch a transcript folder; the rescan covers it", "session", e.id, "dir", abs, "err", err)
			c.mu.Lock()
			delete(e.tdirs, abs) // tried again at the next pass
			delete(c.byBridge, abs)
			c.mu.Unlock()
			covered = false // so every pass reads the transcripts, as the watch would have asked
			continue
		}
		added++
	}
	if added > 0 && covered {
		// A line written after the folder was listed and before its watch began is seen by no
		// watch: read them once more.
		c.scheduleFor(e, lane.Again{Reconcile: true})
		return false
	}
	return covered
}

// Watches is the number of folders the collector watches; safe from any goroutine.
func (c *Collector) Watches() int {
	c.mu.Lock()
	w := c.w
	c.mu.Unlock()
	return w.Len()
}

// handle schedules a pass for a change in a session's folder of ours, its host channel or its
// transcripts.
func (c *Collector) handle(ev fswatch.Event) {
	if ev.Op == fswatch.Chmod && filepath.Base(ev.Name) != path.Base(session.AliveFile) {
		return // a change of mode or times alone changes nothing we read, but the lease's date
	}
	if fswatch.Gone(ev) {
		c.watchedGone(filepath.Clean(ev.Name))
	}
	dir, base := filepath.Split(filepath.Clean(ev.Name))
	dir = filepath.Clean(dir)
	c.mu.Lock()
	e := c.byBridge[dir]
	transcripts := e != nil && e.tdirs[dir]
	c.mu.Unlock()
	if e == nil {
		return
	}
	if ev.Has(fswatch.Remove) && (dir == filepath.Dir(e.bridge) || dir == e.bridge && base == "decisions") {
		// settings.json, our folder or the transcripts going: perhaps the session's removal.
		// (Decision files, lock and temporary files come and go all the time, and do not count.)
		if rel, err := filepath.Rel(e.dir, ev.Name); err == nil && session.RemovalSign(filepath.ToSlash(rel)) {
			c.opts.Removals.Saw(e.dir, filepath.ToSlash(rel))
		}
	}
	switch {
	case transcripts:
		if ev.Has(fswatch.Create) || ev.Has(fswatch.Write) || fswatch.Gone(ev) {
			c.scheduleFor(e, lane.Again{Reconcile: true}) // a transcript line, or a transcript moved: reconcile now
		}
	case dir == e.chBridge:
		if rid, ok := decisions.EventRID(base); ok && (ev.Has(fswatch.Create) || ev.Has(fswatch.Write)) {
			c.scheduleChannel(e, rid) // an event handed over on the Mac
		}
	case lane.IsSpoolName(base):
		c.scheduleFor(e, lane.Again{Housekeep: base != lane.SpoolBase}) // a rotated spool is drained by the housekeeping pass
	case dir == filepath.Dir(e.bridge):
		c.claudeEvent(e, base, ev)
	case dir == filepath.Join(e.bridge, "decisions"):
		c.decisionEvent(e, base, ev)
	case dir == e.bridge && base == path.Base(session.AliveFile) && (ev.Has(fswatch.Create) || ev.Has(fswatch.Write) || ev.Has(fswatch.Chmod)):
		// Chmod: a lease redated where it stands (touch) is a plant as much as one rewritten.
		c.leaseChanged(e)
	} // anything else: the hook's temporary files, our own temporary files
}

// leaseChanged checks a change the watcher reported to the session's lease. The lane's own
// renewal is known by its stamp and needs nothing: a pass for it cost every idle session a second
// pass at each rescan, kept its folders open, and took the session for stirred. While a pass
// runs, the change may be that pass's renewal, whose stamp the lane has not noted yet: it is
// looked at once the pass is done.
func (c *Collector) leaseChanged(e *entry) {
	c.mu.Lock()
	if e.running {
		e.leaseChanged = true
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	if fi, err := os.Lstat(filepath.Join(e.dir, filepath.FromSlash(session.AliveFile))); err == nil && e.lane.OwnLease(fi) {
		return
	}
	e.lane.Plants().CheckLease()
	c.schedule(e, false)
}

// claudeEvent handles a change in the session's .claude folder.
func (c *Collector) claudeEvent(e *entry, base string, ev fswatch.Event) {
	switch {
	case base == filepath.Base(e.bridge) && ev.Has(fswatch.Create):
		// Our folder was replaced: watch the new one now, not at the next rescan, and put the
		// lease back so that hooks in the VM are answered.
		c.watch(e)
		c.schedule(e, true)
	case session.ClaudeDir+"/"+base == transcript.Projects && (ev.Has(fswatch.Create) || fswatch.Gone(ev)):
		c.schedule(e, false) // the CLI's first transcript is coming: follow it from its first line
	case instructions.Name(session.ClaudeDir+"/"+base) && (ev.Has(fswatch.Create) || ev.Has(fswatch.Write) || ev.Has(fswatch.Rename)):
		c.schedule(e, true) // .claude/CLAUDE.md changed: scan it now, not at the next rescan
	}
}

// decisionEvent judges a change in the session's decisions folder: a decision file the daemon
// did not write is a forged answer, which the session's next pass records.
func (c *Collector) decisionEvent(e *entry, base string, ev fswatch.Event) {
	rid, ok := strings.CutSuffix(base, ".json")
	if !ok || !claudehook.ValidRID(rid) {
		return // temporary files, ours and the hook's
	}
	switch {
	case ev.Has(fswatch.Create):
		if e.lane.Plants().DecisionAppeared(rid) {
			c.scheduleFor(e, lane.Again{})
		}
	case ev.Has(fswatch.Remove), ev.Has(fswatch.Rename):
		e.lane.Plants().DecisionGone(rid)
	}
}

// watchedGone forgets a watched folder that went (reported by its own watch or its parent's): a
// folder made again at its name is not watched until it is added anew. A transcript folder is
// added at the next reading; .claude, where new ones are made, at the housekeeping pass this
// asks for, and until then every pass reads the transcripts.
func (c *Collector) watchedGone(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byBridge[name]
	if e == nil {
		return
	}
	// The watches of the folders below went with it, off the names they had.
	for d := range e.tdirs {
		if d == name || strings.HasPrefix(d, name+string(filepath.Separator)) {
			delete(e.tdirs, d)
			delete(c.byBridge, d)
			e.reconcileDue = true
		}
	}
	if name == filepath.Dir(e.bridge) {
		e.claudeWatched = false
		c.enqueueLocked(e, lane.Again{Housekeep: true, Reconcile: true, Channel: true})
	}
}

// work runs queued sessions' passes until the queue is closed.
func (c *Collector) work(ctx context.Context) {
	for e := range c.queue {
		c.mu.Lock()
		e.queued, e.running = false, true
		w := c.workLocked(e)
		c.mu.Unlock()
		var res lane.Result
		if ctx.Err() == nil {
			res = e.lane.Pass(ctx, w)
		}
		c.apply(e, res)
		gone, lease := c.passDone(e, w.Housekeep, res)
		if gone {
			// Untracked while its pass ran: the pass may have opened its folders again after
			// Untrack released them, and nothing else would close them.
			e.lane.Release()
		} else if lease {
			c.leaseChanged(e)
		}
		c.passes.Add(1)
	}
}

// Passes is the number of passes run since the start, and whether none is queued or running
// now; safe from any goroutine.
func (c *Collector) Passes() (n uint64, idle bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	idle = true
	for _, e := range c.sessions {
		idle = idle && !e.queued && !e.running
	}
	return c.passes.Load(), idle
}

// apply does what a pass asked for beyond its session, while the session still counts as
// running: a pass asked for now runs right after.
func (c *Collector) apply(e *entry, res lane.Result) {
	if res.Commit {
		c.requestCommit()
	}
	if res.Rewatch {
		c.watch(e)
	}
	if res.Read {
		covered := c.watchTranscripts(e, res.Dirs) && !res.More
		c.mu.Lock()
		e.covered = covered
		c.mu.Unlock()
	}
	for _, a := range res.Again {
		if a.After <= 0 {
			c.scheduleFor(e, a)
			continue
		}
		time.AfterFunc(a.After, func() { c.scheduleFor(e, a) })
	}
}

// passDone queues e again if something came in during its pass that the pass did not handle,
// and after a housekeeping pass notes whether the session is calm. It reports whether the
// session is gone, and whether its lease changed while the pass ran.
func (c *Collector) passDone(e *entry, housekept bool, res lane.Result) (gone, lease bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.running = false
	lease, e.leaseChanged = e.leaseChanged, false
	if housekept {
		c.settleLocked(e, res.Quiet)
	}
	for _, rid := range res.Taken {
		e.taken.add(rid)
	}
	for _, rid := range e.waiting {
		// Its file appeared too late for the pass, or was still being written.
		if !e.taken.has(rid) {
			e.name(rid)
			e.dirty = true
		}
	}
	e.waiting = e.waiting[:0]
	if e.dirty && !e.gone && !c.stopped {
		e.dirty, e.queued = false, true
		c.queue <- e
	}
	return e.gone, lease
}

// shutdown stops the workers and withdraws the leases.
func (c *Collector) shutdown(workers *sync.WaitGroup) {
	c.mu.Lock()
	c.stopped = true
	close(c.queue)
	all := c.trackedLocked()
	c.mu.Unlock()
	c.env.Leases.Withdraw()
	// Leases first: hooks starting from now deny at once rather than wait for an answer.
	defer func() {
		for _, e := range all {
			e.lane.Release()
		}
	}()
	for _, e := range all {
		for _, dir := range []string{e.lane.Channel(), e.dir} {
			if dir == "" {
				continue
			}
			s, err := session.Open(dir)
			if err != nil {
				continue
			}
			if err := decisions.RemoveAlive(s); err != nil && !errors.Is(err, fs.ErrNotExist) {
				c.log.Warn("cannot withdraw a session's alive lease; its hooks will wait out their timeout", "session", e.id, "err", err)
			}
			s.Close()
		}
	}
	workers.Wait()
}

// commitGap is the least time between two commits. Each costs two fsyncs; batching them bounds
// that cost under load, and a crash inside the gap only replays lines that the decision log's
// request ids then skip.
const commitGap = 100 * time.Millisecond

func (c *Collector) commitLoop(done <-chan struct{}) {
	for {
		select {
		case <-c.commit:
			c.flush()
		case <-done:
			return
		}
		select {
		case <-time.After(commitGap):
		case <-done:
			return
		}
	}
}

// flush makes the decision log durable, then the offsets that rely on it: a power loss may
// replay events (skipped by rid), never lose them.
func (c *Collector) flush() {
	if err := c.opts.Sink.Sync(); err != nil {
		c.log.Warn("cannot flush the decision log; offsets stay where they were", "err", err)
		return
	}
	if err := c.opts.Offsets.Commit(); err != nil {
		c.log.Warn("cannot save spool offsets; a restart will replay (not lose) events", "err", err)
	}
}
