// Package collector is the daemon's pipeline. It follows the spool of every session it is told
// about, decodes each line, has the classifier judge it, answers a waiting enforce hook with a
// decision file, records the event in the decision log, counts it for health, and only then
// advances the spool offset. It also keeps each session's alive lease current, sweeps what hooks
// left behind, and rotates spools so that raw tool input does not pile up.
//
// It does not find sessions (the injector does, and calls Track and Untrack) and never writes a
// session's settings.
package collector

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/collector/internal/flood"
	"github.com/coworkbridge/coworkbridge/collector/internal/instructions"
	"github.com/coworkbridge/coworkbridge/collector/internal/plants"
	"github.com/coworkbridge/coworkbridge/decisions"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// Health receives the collector's counts; *health.Health implements it.
type Health interface {
	Event(id string, d health.Decision, latency time.Duration)
	Quarantined(id, reason string, until time.Time)
	InstructionFindings(id string, files map[string][]string)
	InstructionFiles(id string, names []string)
	// CLIVersion: a transcript of the session names this Claude Code version.
	CLIVersion(id, version string)
	// Count: one occurrence of a counted code in the session.
	Count(id string, code health.Code)
	CountN(id string, code health.Code, n int)
}

// Sink is the decision log; *telemetry.Log implements it.
type Sink interface {
	WriteBatch([]telemetry.Record) error
	Sync() error
}

// Options are the collector's dependencies and limits; zero values take the defaults.
type Options struct {
	Logger  *slog.Logger
	Health  Health
	Sink    Sink
	Offsets *spool.Store
	// Recorded holds the request ids already in the decision log when the daemon started: lines
	// replayed because a crash came before their offsets were committed are skipped, not doubled.
	Recorded map[string]bool
	Now      func() time.Time
	// Workers drain sessions in parallel; one session is only ever drained by one at a time.
	Workers int
	// Poll, when set, switches the file watcher off and drains every session every Poll: the
	// polling design the watcher replaced, kept for the benchmark that compares them.
	Poll time.Duration
	// Watcher starts the file watcher; nil: fswatch.New. Tests pass a fake.
	Watcher func() (fswatch.Watcher, error)
	// RotateBytes: a spool drained past this size is renamed aside and a fresh one begins.
	RotateBytes int64
	// RotateIdle: a drained spool untouched this long is rotated away too.
	RotateIdle time.Duration
	// RotateGrace: a renamed spool is removed only this long after the rename, once drained, as a
	// hook that opened it just before the rename may still append to it.
	RotateGrace time.Duration
	// MaxSessions bounds the sessions tracked.
	MaxSessions int
	// BatchLines bounds the lines handled between two offset updates.
	BatchLines int
	// Host and User fill the {host} and {user} of an admin's help URL (managed.json's
	// block_message) in what a denied call is told.
	Host, User string
	// ChannelRoot holds the sessions' host channels (see session.ChannelDir); empty for none.
	ChannelRoot string
	// QuarantineFor is how long a session stays quarantined after the last attempt to disable or
	// fool the guard in it. Default 10 minutes.
	QuarantineFor time.Duration
	// ReconcileGrace is how long a call seen to have run in the transcript may wait for its event
	// before it counts as unguarded. Default 5 s.
	ReconcileGrace time.Duration
	// ForgedAfter is how long an event may wait for its call to show in one of the session's
	// transcripts (the CLI writes it about half a second after the hook runs) before it counts
	// as forged. Default 1 minute.
	ForgedAfter time.Duration
	// SessionBytes is the budget of what reconciliation keeps for one session (default
	// SessionBytes): past it the session is over budget, reported, and what does not fit is
	// not kept.
	SessionBytes int64
	// BudgetRecords and BudgetBytes bound what one session may put in the decision log per
	// minute (records, and bytes of tool input); the excess is summarised, not logged line by
	// line, so that no session can push the others' records out through rotation. Defaults 600
	// and 4 MiB: ten calls a second, sustained, is no agent's ordinary work.
	BudgetRecords int
	BudgetBytes   int64
	// Removals records removals seen in sessions, shared with the injector: while one is going on
	// in a session, neither our folder nor the lease is put back there. Default: the collector's
	// own record.
	Removals *session.Removals
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Workers <= 0 {
		o.Workers = max(4, 2*runtime.GOMAXPROCS(0))
	}
	if o.RotateBytes <= 0 {
		o.RotateBytes = 8 << 20
	}
	if o.RotateIdle <= 0 {
		o.RotateIdle = time.Hour
	}
	if o.RotateGrace <= 0 {
		o.RotateGrace = 10 * time.Second
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = health.MaxSessions
	}
	if o.BatchLines <= 0 {
		o.BatchLines = 256
	}
	if o.SessionBytes <= 0 {
		o.SessionBytes = SessionBytes
	}
	if o.BudgetRecords <= 0 {
		o.BudgetRecords = 600
	}
	if o.BudgetBytes <= 0 {
		o.BudgetBytes = 4 << 20
	}
	if o.ReconcileGrace <= 0 {
		o.ReconcileGrace = 5 * time.Second
	}
	if o.ForgedAfter <= 0 {
		o.ForgedAfter = time.Minute
	}
	if o.QuarantineFor <= 0 {
		o.QuarantineFor = 10 * time.Minute
	}
	if o.Removals == nil {
		o.Removals = session.NewRemovals(o.Now)
	}
	if o.Watcher == nil {
		o.Watcher = fswatch.New
	}
}

// policy is what judging needs, swapped whole on a configuration change.
type policy struct {
	cfg managedconfig.Config
	cls *classifier.Classifier
}

// Collector runs the pipeline for the sessions it tracks.
type Collector struct {
	opts   Options
	log    *slog.Logger
	pol    atomic.Pointer[policy]
	reconf chan struct{}
	commit chan struct{}
	// recorded is opts.Recorded, consumed as replays are skipped.
	recMu    sync.Mutex
	recorded map[string]bool

	mu       sync.Mutex
	sessions map[string]*tracked // by session folder
	byBridge map[string]*tracked // by the folder the watcher reports
	queue    chan *tracked
	w        fswatch.Watcher
	stopped  bool
	// leaseUntil is the time the alive leases last written run to.
	leaseUntil time.Time
	// kept counts the folder handles the sessions keep open (see keptHandle).
	kept atomic.Int32

	// sink tracks decision-log failures for logging.
	sink sinkState

	// leaseMu: writers of leases hold it shared; shutdown takes it to set withdrawn.
	leaseMu   sync.RWMutex
	withdrawn bool
}

// tracked is one session. The flags are guarded by Collector.mu; the rest belongs to whichever
// worker is draining the session, and only one ever is. The checks (plants, the ledger behind
// reconciliation, the instruction scan, the flood budget) are packages of their own under
// internal/, whose state only their methods reach; plants, shared with the watcher, has its own
// lock.
type tracked struct {
	dir, id, bridge string
	// channel is the session's host channel and chBridge its bridge folder; empty without one.
	channel, chBridge string
	// sess and ch are the session folder and its channel, kept open between passes while the
	// session is busy (see keptHandle).
	sess, ch keptHandle
	// taken are the request ids last taken from the channel (guarded by Collector.mu); waiting,
	// those the watcher reported while a pass was running, which start another pass only if that
	// pass did not take them.
	taken   takenRIDs
	waiting []string

	queued, running, dirty bool
	gone                   bool
	housekeep              bool // refresh the lease and sweep on the next drain
	// channelDue: the next pass lists the host channel. A change seen in the session itself (a
	// spool, a transcript, a decision file) does not ask for it: listing an idle channel at each
	// event of a hook in the VM was a tenth of the daemon's work.
	channelDue bool
	// named are the request ids of event files the watcher saw come in the host channel: the
	// next pass takes them by name, one look each, instead of listing the channel.
	named []string
	// reconcileDue: the next pass reads the transcripts. An event alone does not ask for it
	// while the transcripts' folders are all watched (see reconciler.covered): their changes
	// ask for it themselves.
	reconcileDue bool
	// claudeWatched: the session's .claude folder, where the transcripts' folders are made, is
	// watched.
	claudeWatched bool

	// decided: decisions written whose telemetry is not yet in, so a retry does not write again.
	decided map[string]time.Time
	refused string // the last spool refusal reported, so that it is reported once
	// quarantined: until then every call is denied (guarded by Collector.mu); why says for what.
	quarantined time.Time
	why         string
	// plants tells our writes in the bridge folder from the agent's (its own lock).
	plants plants.Watch
	// recon reconciles the transcript with the events judged; the worker's.
	recon *reconciler
	// tdirs are the transcript folders watched (guarded by Collector.mu).
	tdirs map[string]bool
	// instr is what the last scan of the session's instruction files saw; the worker's.
	instr instructions.Scan
	// flood is this minute's use of the decision log; backlog, by spool offset key, where each
	// spool stood on the first pass (nil before it): the worker's.
	flood   flood.Window
	backlog map[string]int64
	// overflow are records the budget left out, until a transcript shows their call; the worker's.
	overflow heldRecords
	// rids are the request ids recorded lately, to catch a line reusing one; the worker's.
	rids plants.RIDs
	// partial: what the last drain learnt of each spool's unfinished last line, by offset key.
	partial  map[string]spool.Partial
	failures int       // consecutive decision-log failures, for the retry backoff
	retryAt  time.Time // no decision-log write before then
	// window bounds the lines of the next batch (0: BatchLines). A failed write drops it to one
	// line and each success doubles it, so that a retry after a full disk writes what the freed
	// space holds instead of retrying a whole batch that refills it and stalls.
	window int
	// held: a housekeeping pass was put off by a removal in progress and is due again;
	// prepared: our folder was made in the session once; bridgeGone: when it was first found
	// gone since (all guarded by Collector.mu).
	held       bool
	prepared   bool
	bridgeGone time.Time
}

// newTracked is a session to follow, not yet in any map.
func newTracked(dir string, budget int64) *tracked {
	return &tracked{dir: dir, id: filepath.Base(dir), bridge: filepath.Join(dir, filepath.FromSlash(session.BridgeDir)),
		decided: map[string]time.Time{}, partial: map[string]spool.Partial{},
		recon: newReconciler(time.Now(), budget)}
}

// New returns a collector judging with cls under cfg; Run starts it.
func New(cfg managedconfig.Config, cls *classifier.Classifier, opts Options) *Collector {
	opts.defaults()
	c := &Collector{
		opts: opts, log: opts.Logger, w: fswatch.Nop(), reconf: make(chan struct{}, 1), commit: make(chan struct{}, 1),
		recorded: opts.Recorded, sessions: map[string]*tracked{}, byBridge: map[string]*tracked{},
		queue: make(chan *tracked, opts.MaxSessions),
	}
	c.pol.Store(&policy{cfg: cfg, cls: cls})
	return c
}

// SetConfig puts a new configuration and classifier in force; the next line judged uses them.
func (c *Collector) SetConfig(cfg managedconfig.Config, cls *classifier.Classifier) {
	c.pol.Store(&policy{cfg: cfg, cls: cls})
	select {
	case c.reconf <- struct{}{}:
	default:
	}
	c.scheduleAll(true) // a new lease length or mode reaches every session now
}

// Track starts following the session at dir. It writes the alive lease before it returns, so
// that a hook put in place right after finds the daemon vouched for.
func (c *Collector) Track(dir string) {
	dir = filepath.Clean(dir)
	c.mu.Lock()
	t := c.sessions[dir]
	if t == nil {
		if len(c.sessions) >= c.opts.MaxSessions {
			c.mu.Unlock()
			c.log.Warn("session limit reached; this session's spool is not followed", "session", filepath.Base(dir), "limit", c.opts.MaxSessions)
			return
		}
		t = newTracked(dir, c.opts.SessionBytes)
		c.byBridge[filepath.Join(t.bridge, "decisions")] = t
		c.byBridge[filepath.Dir(t.bridge)] = t // .claude: a recreated bridge folder is watched at once
		if c.opts.ChannelRoot != "" {
			t.channel = session.ChannelDir(c.opts.ChannelRoot, t.id)
			t.chBridge = filepath.Join(t.channel, filepath.FromSlash(session.BridgeDir))
			c.byBridge[t.chBridge] = t
		}
		c.sessions[dir] = t
		c.byBridge[t.bridge] = t
	}
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return
	}
	until := c.leaseFor(c.opts.Now())
	if t.channel != "" {
		// A handle of its own: the worker's kept one may be released meanwhile.
		if cs := c.freshChannel(t); cs != nil {
			c.prepare(cs, until)
			cs.Close()
		}
	}
	if s, err := session.Open(dir); err == nil {
		c.prepare(s, until)
		s.Close()
	}
	c.watch(t)
	c.schedule(t, true)
}

// Untrack stops following the session named id (its folder's name): it is gone or no longer
// live. Its lease lapses by itself; its offsets are kept while the folder exists, in case it
// comes back.
func (c *Collector) Untrack(id string) {
	c.mu.Lock()
	t := c.byIDLocked(id)
	if t != nil {
		t.gone = true
		delete(c.sessions, t.dir)
		delete(c.byBridge, t.bridge)
		delete(c.byBridge, t.chBridge)
		delete(c.byBridge, filepath.Join(t.bridge, "decisions"))
		delete(c.byBridge, filepath.Dir(t.bridge))
	}
	var tdirs []string
	if t != nil {
		for d := range t.tdirs {
			delete(c.byBridge, d)
			tdirs = append(tdirs, d)
		}
	}
	w := c.w
	c.mu.Unlock()
	if t == nil {
		return
	}
	for _, d := range tdirs {
		_ = w.Remove(d)
	}
	_ = w.Remove(t.bridge) // fails harmlessly when the folder is already gone
	if t.chBridge != "" {
		_ = w.Remove(t.chBridge)
	}
	t.ch.release(&c.kept)
	t.sess.release(&c.kept)
	if _, err := os.Lstat(t.dir); errors.Is(err, fs.ErrNotExist) {
		if t.channel != "" {
			// The session is gone: so are its hooks. Events still waiting were drained by
			// the last pass or belong to calls that never ran.
			if err := os.RemoveAll(t.channel); err != nil {
				c.log.Warn("cannot remove a gone session's host channel", "session", t.id, "err", err)
			}
		}
		for _, k := range c.opts.Offsets.Keys(offsetPrefix(t.dir)) {
			c.opts.Offsets.Forget(k)
		}
		c.requestCommit()
	}
}

// Quarantine denies every further call in the session named id (its folder's name) for
// QuarantineFor from now: something in it tried to switch the guard off or fool it. Each new
// attempt starts the period again, so the quarantine lifts only once the daemon has repaired the
// session and the attempts have stopped.
func (c *Collector) Quarantine(id, reason string) {
	until := c.opts.Now().Add(c.opts.QuarantineFor)
	c.mu.Lock()
	t := c.byIDLocked(id)
	if t != nil {
		t.quarantined, t.why = until, reason
	}
	c.mu.Unlock()
	c.log.Warn("session quarantined: every tool call in it is denied", "code", health.CodeSessionQuarantined, "session", id, "reason", reason, "until", until.Format(time.RFC3339))
	c.opts.Health.Quarantined(id, reason, until)
	if t != nil {
		c.tellHostHook(t, until, reason)
	}
}

// tellHostHook writes the quarantine into the session's host channel, where the host hook reads
// it: under lockdown it, not the session's own hook, answers every call on the Mac.
func (c *Collector) tellHostHook(t *tracked, until time.Time, reason string) {
	if t.channel == "" {
		return
	}
	s := c.freshChannel(t)
	if s == nil {
		return // freshChannel said why
	}
	defer s.Close()
	if err := decisions.WriteQuarantine(s, until, reason); err != nil {
		c.log.Warn("cannot tell the host hook of a quarantine; under lockdown the session's calls on the Mac are judged one by one", "code", health.CodeDecisionFailed, "session", t.id, "err", err)
	}
}

// quarantine returns why the session is quarantined now, "" when it is not.
func (c *Collector) quarantine(t *tracked) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.opts.Now().Before(t.quarantined) {
		return t.why
	}
	return ""
}

// byIDLocked finds a tracked session by its folder's name. Callers hold mu.
func (c *Collector) byIDLocked(id string) *tracked {
	for _, t := range c.sessions {
		if t.id == id {
			return t
		}
	}
	return nil
}

// Sessions is the number of sessions tracked.
func (c *Collector) Sessions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

// schedule queues a drain of t, or marks it for one more pass if it is being drained now.
func (c *Collector) schedule(t *tracked, housekeep bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scheduleLocked(t, housekeep)
}

// scheduleLocked is schedule for callers that hold mu.
func (c *Collector) scheduleLocked(t *tracked, housekeep bool) {
	t.reconcileDue = true
	c.enqueueLocked(t, housekeep, true)
}

// scheduleReconcile is schedule for a change seen in the transcripts, or a reading of them put
// off: the pass it starts reads them, and need not list the host channel.
func (c *Collector) scheduleReconcile(t *tracked) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.reconcileDue = true
	c.enqueueLocked(t, false, false)
}

// scheduleSession is schedule for a change to a spool: the pass it starts need not list the host
// channel, whose own changes schedule their passes, nor read the transcripts unless their
// watches leave some out.
func (c *Collector) scheduleSession(t *tracked, housekeep bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.enqueueLocked(t, housekeep, false)
}

func (c *Collector) enqueueLocked(t *tracked, housekeep, channel bool) {
	if t.gone || c.stopped {
		return
	}
	t.housekeep = t.housekeep || housekeep
	t.channelDue = t.channelDue || channel
	switch {
	case t.running:
		t.dirty = true
	case !t.queued:
		t.queued = true
		c.queue <- t // never blocks: each session is queued at most once and the queue holds them all
	}
}

// scheduleChannel is schedule for an event file seen in t's host channel: one the last pass took
// starts no pass, and while a pass runs it is noted for work to look at when the pass is done.
func (c *Collector) scheduleChannel(t *tracked, rid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case t.gone || c.stopped || t.taken.has(rid):
	case t.running && len(t.waiting) < takenMax:
		t.waiting = append(t.waiting, rid)
	case t.running:
		c.scheduleLocked(t, false) // more than it can follow by name: the next pass lists them
	default:
		t.name(rid)
		c.enqueueLocked(t, false, false)
	}
}

// name notes an event file for the next pass to take by name; past takenMax of them, that pass
// lists the channel instead. Callers hold mu.
func (t *tracked) name(rid string) {
	switch {
	case slices.Contains(t.named, rid):
	case len(t.named) < takenMax:
		t.named = append(t.named, rid)
	default:
		t.channelDue = true
	}
}

// pass is what one pass over a session does beyond reading a spool that moved.
type pass struct {
	housekeep bool // renew the lease, sweep, read every spool
	reconcile bool // read the transcripts
	ch        channelWork
}

// passWork is what the next pass of t does, taken under mu as the pass starts: a housekeeping
// pass lists the channel and reads the transcripts too.
func (t *tracked) passWork() pass {
	w := pass{housekeep: t.housekeep, reconcile: t.reconcileDue || t.housekeep,
		ch: channelWork{list: t.channelDue || t.housekeep, named: t.named}}
	t.housekeep, t.reconcileDue, t.channelDue, t.named = false, false, false, nil
	return w
}

func (c *Collector) scheduleAll(housekeep bool) {
	c.mu.Lock()
	all := c.trackedLocked()
	c.mu.Unlock()
	for _, t := range all {
		c.schedule(t, housekeep)
	}
}

// trackedLocked lists the tracked sessions, for work done outside the lock. Callers hold mu.
func (c *Collector) trackedLocked() []*tracked {
	all := make([]*tracked, 0, len(c.sessions))
	for _, t := range c.sessions {
		all = append(all, t)
	}
	return all
}

func (c *Collector) requestCommit() {
	select {
	case c.commit <- struct{}{}:
	default: // one is pending and will cover this
	}
}
