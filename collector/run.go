package collector

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/coworkbridge/coworkbridge/collector/internal/instructions"
	"github.com/coworkbridge/coworkbridge/decisions"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/transcript"
)

// leaseCheck is how often the wall clock is compared with the leases: after a Mac wakes from
// sleep, timers lag the clock, and leases must not lapse under sessions that are in use.
const leaseCheck = 5 * time.Second

// Run follows the tracked sessions until ctx is done, then withdraws every alive lease (so that
// enforce hooks deny at once while the daemon is down) and commits the offsets. It returns nil
// on cancel; a watcher that cannot start is logged and the rescan carries on alone.
func (c *Collector) Run(ctx context.Context) error {
	w := fswatch.Nop()
	if c.opts.Poll == 0 {
		var err error
		if w, err = c.opts.Watcher(); err != nil {
			c.log.Error("cannot start the spool watcher; spools are drained at each rescan only", "err", err)
			w = fswatch.Nop()
		}
	}
	defer w.Close()
	c.mu.Lock()
	c.w = w
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
	for _, t := range all {
		c.watch(t)
	}
	c.scheduleAll(true)

	rescan := time.NewTicker(c.rescanEvery())
	defer rescan.Stop()
	lease := time.NewTicker(leaseCheck)
	defer lease.Stop()
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
			c.scheduleAll(true)
		case <-lease.C:
			c.mu.Lock()
			due := c.opts.Now().After(c.leaseUntil.Add(-c.leaseLength() / 2))
			c.mu.Unlock()
			if due {
				c.scheduleAll(true)
			}
		case <-c.reconf:
			rescan.Reset(c.rescanEvery())
		}
	}
}

// rescanEvery is the safety net's period: the configured rescan, or Poll when polling is the
// design under test.
func (c *Collector) rescanEvery() time.Duration {
	if c.opts.Poll > 0 {
		return c.opts.Poll
	}
	return c.pol.Load().cfg.RescanInterval
}

// leaseLength is how far ahead a lease vouches: three rescans, so that a late tick never lets it
// lapse, and at least 15 s.
func (c *Collector) leaseLength() time.Duration {
	return max(3*c.pol.Load().cfg.RescanInterval, 15*time.Second)
}

// leaseFor returns the time a lease written now runs to, and remembers it.
func (c *Collector) leaseFor(now time.Time) time.Time {
	until := now.Add(c.leaseLength())
	c.mu.Lock()
	if until.After(c.leaseUntil) {
		c.leaseUntil = until
	}
	c.mu.Unlock()
	return until
}

// watch adds the session's folder of ours to the watcher; it is idempotent.
func (c *Collector) watch(t *tracked) {
	c.mu.Lock()
	w := c.w
	c.mu.Unlock()
	if t.chBridge != "" {
		if err := w.Add(t.chBridge); err != nil { // our own state: nothing in it is planted
			c.log.Debug("cannot watch a session's host channel; the rescan covers it", "session", t.id, "err", err)
		}
	}
	claude := filepath.Dir(t.bridge)
	for _, dir := range []string{claude, t.bridge, filepath.Join(t.bridge, "decisions")} {
		// A link at any step is refused, never watched through, even one swapped in meanwhile.
		err := fswatch.AddInside(w, t.dir, dir)
		if err != nil {
			c.log.Debug("cannot watch a session's folder of ours; the rescan covers it", "session", t.id, "dir", dir, "err", err)
		}
		if dir == claude {
			c.mu.Lock()
			t.claudeWatched = err == nil
			c.mu.Unlock()
		}
	}
}

// maxTranscriptDirs bounds the transcript folders watched per session; past it the rate-limited
// reads at each drain and the rescan cover the rest.
const maxTranscriptDirs = 16

// watchTranscripts watches the folders that hold the session's transcripts, so that a line the
// CLI writes is read within seconds, not at the next rescan. It reports whether the watches
// cover them all, and .claude where new ones are made: then only a change they report, or a
// rescan, needs the transcripts read again.
func (c *Collector) watchTranscripts(t *tracked, dirs []string) (covered bool) {
	c.mu.Lock()
	w := c.w
	covered = t.claudeWatched && !t.gone
	var add []string
	for _, d := range dirs {
		abs := filepath.Join(t.dir, filepath.FromSlash(d))
		switch {
		case t.tdirs[abs]:
			continue
		case len(t.tdirs) >= maxTranscriptDirs || t.gone:
			covered = false
			continue
		}
		if t.tdirs == nil {
			t.tdirs = map[string]bool{}
		}
		t.tdirs[abs] = true
		c.byBridge[abs] = t
		add = append(add, abs)
	}
	c.mu.Unlock()
	added := 0
	for _, abs := range add {
		if err := fswatch.AddInside(w, t.dir, abs); err != nil {
			c.log.Debug("cannot watch a transcript folder; the rescan covers it", "session", t.id, "dir", abs, "err", err)
			c.mu.Lock()
			delete(t.tdirs, abs) // tried again at the next pass
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
		c.scheduleReconcile(t)
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

// handle schedules a drain for a change to a spool.
func (c *Collector) handle(ev fswatch.Event) {
	if ev.Op == fswatch.Chmod {
		return
	}
	if fswatch.Gone(ev) {
		c.watchedGone(filepath.Clean(ev.Name))
	}
	dir, base := filepath.Split(filepath.Clean(ev.Name))
	dir = filepath.Clean(dir)
	c.mu.Lock()
	t := c.byBridge[dir]
	c.mu.Unlock()
	if t != nil && ev.Has(fswatch.Remove) && (dir == filepath.Dir(t.bridge) || dir == t.bridge && base == "decisions") {
		// settings.json, our folder or the transcripts going: perhaps the session's removal.
		// (Decision files, lock and temporary files come and go all the time, and do not count.)
		if rel, err := filepath.Rel(t.dir, ev.Name); err == nil && session.RemovalSign(filepath.ToSlash(rel)) {
			c.opts.Removals.Saw(t.dir, filepath.ToSlash(rel))
		}
	}
	switch {
	case t == nil:
	case c.transcriptDir(t, dir):
		if ev.Has(fswatch.Create) || ev.Has(fswatch.Write) || fswatch.Gone(ev) {
			c.scheduleReconcile(t) // a transcript line, or a transcript moved: reconcile now
		}
	case dir == t.chBridge:
		if rid, ok := decisions.EventRID(base); ok && (ev.Has(fswatch.Create) || ev.Has(fswatch.Write)) {
			c.scheduleChannel(t, rid) // an event handed over on the Mac
		}
	case isSpoolName(base):
		c.scheduleSession(t, base != spoolBase) // a rotated spool is drained by the housekeeping pass
	case dir == filepath.Dir(t.bridge):
		if base == filepath.Base(t.bridge) && ev.Has(fswatch.Create) {
			// Our folder was replaced: watch the new one now, not at the next rescan, and put
			// the lease back so that hooks in the VM are answered.
			c.watch(t)
			c.schedule(t, true)
		} else if session.ClaudeDir+"/"+base == transcript.Projects && (ev.Has(fswatch.Create) || fswatch.Gone(ev)) {
			c.schedule(t, false) // the CLI's first transcript is coming: follow it from its first line
		} else if instructions.Name(session.ClaudeDir+"/"+base) && (ev.Has(fswatch.Create) || ev.Has(fswatch.Write) || ev.Has(fswatch.Rename)) {
			c.schedule(t, true) // .claude/CLAUDE.md changed: scan it now, not at the next rescan
		}
	case dir == filepath.Join(t.bridge, "decisions"):
		c.decisionEvent(t, base, ev)
	case dir == t.bridge && base == path.Base(session.AliveFile) && (ev.Has(fswatch.Create) || ev.Has(fswatch.Write)):
		t.plants.CheckLease()
		c.schedule(t, false)
	} // anything else: the hook's temporary files, our own temporary files
}

func (c *Collector) transcriptDir(t *tracked, dir string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return t.tdirs[dir]
}

// watchedGone forgets a watched folder that went (reported by its own watch or its parent's): a
// folder made again at its name is not watched until it is added anew. A transcript folder is
// added at the next reading; .claude, where new ones are made, at the housekeeping pass this
// asks for, and until then every pass reads the transcripts.
func (c *Collector) watchedGone(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.byBridge[name]
	if t == nil {
		return
	}
	// The watches of the folders below went with it, off the names they had.
	for d := range t.tdirs {
		if d == name || strings.HasPrefix(d, name+string(filepath.Separator)) {
			delete(t.tdirs, d)
			delete(c.byBridge, d)
			t.reconcileDue = true
		}
	}
	if name == filepath.Dir(t.bridge) {
		t.claudeWatched = false
		c.scheduleLocked(t, true)
	}
}

func isSpoolName(base string) bool {
	return base == spoolBase || strings.HasPrefix(base, rotatedPrefix) && strings.HasSuffix(base, ".jsonl")
}

// work drains queued sessions until the queue is closed.
func (c *Collector) work(ctx context.Context) {
	for t := range c.queue {
		c.mu.Lock()
		t.queued, t.running = false, true
		w := t.passWork()
		c.mu.Unlock()
		if ctx.Err() == nil {
			c.drain(ctx, t, w)
		}
		c.passDone(t)
	}
}

// passDone queues t again if something came in during its pass that the pass did not handle.
func (c *Collector) passDone(t *tracked) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.running = false
	for _, rid := range t.waiting {
		// Its file appeared too late for the pass, or was still being written.
		if !t.taken.has(rid) {
			t.name(rid)
			t.dirty = true
		}
	}
	t.waiting = t.waiting[:0]
	if t.dirty && !t.gone && !c.stopped {
		t.dirty, t.queued = false, true
		c.queue <- t
	}
}

// shutdown stops the workers and withdraws the leases.
func (c *Collector) shutdown(workers *sync.WaitGroup) {
	c.mu.Lock()
	c.stopped = true
	close(c.queue)
	all := c.trackedLocked()
	c.mu.Unlock()
	c.leaseMu.Lock()
	c.withdrawn = true
	c.leaseMu.Unlock()
	// Leases first: hooks starting from now deny at once rather than wait for an answer.
	defer func() {
		for _, t := range all {
			t.ch.release(&c.kept)
			t.sess.release(&c.kept)
		}
	}()
	for _, t := range all {
		for _, dir := range []string{t.channel, t.dir} {
			if dir == "" {
				continue
			}
			s, err := session.Open(dir)
			if err != nil {
				continue
			}
			if err := decisions.RemoveAlive(s); err != nil && !errors.Is(err, fs.ErrNotExist) {
				c.log.Warn("cannot withdraw a session's alive lease; its hooks will wait out their timeout", "session", t.id, "err", err)
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
