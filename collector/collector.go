// Package collector is the daemon's pipeline. It follows the spool and host channel of every
// session it is told about, and has each session's lane (internal/lane) judge, answer and record
// what came in, and only then advance the offsets. It is the scheduler of those lanes: it keeps
// which sessions exist and what each is due to do, hands a session to one worker at a time,
// arms the later passes a lane asks for, watches the sessions' folders and commits the offsets.
// It also keeps each session's alive lease current and withdraws them all on shutdown.
//
// It does not find sessions (the injector does, and calls Track and Untrack), never writes a
// session's settings, and holds no session's pass state: that is the lane's.
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
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/collector/internal/lane"
	"github.com/coworkbridge/coworkbridge/flow"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/internal/cadence"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"github.com/coworkbridge/coworkbridge/internal/metronome"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
)

// Health receives the collector's counts; *health.Health implements it.
type Health = lane.Health

// Sink is the decision log; *telemetry.Log implements it.
type Sink = lane.Sink

// Options are the collector's dependencies and limits; zero values take the defaults.
type Options struct {
	Logger  *slog.Logger
	Health  Health
	Sink    Sink
	Offsets *spool.Store
	// Rules, when set, judges every call in place of the classifier New and SetConfig are
	// given (nil then): a system-mode worker's link to root, which keeps the policy.
	Rules Rules
	// Recorded holds the request ids already in the decision log when the daemon started: lines
	// replayed because a crash came before their offsets were committed are skipped, not doubled.
	Recorded map[string]bool
	Now      func() time.Time
	// Beat is the process's metronome: the rescan and the lease check tick on it, in the same
	// wake-ups as the process's other periodic work. Nil: a beat of the collector's own.
	Beat *metronome.Metronome
	// ClockTold: whoever runs the collector tells it when the wall clock has run ahead of its
	// timers (RenewDue), and Run ticks no lease check of its own, only one at each rescan. A
	// system-mode worker is told by root, whose beat wakes it anyway: the lease check was every
	// idle worker's one wake-up between two rescans.
	ClockTold bool
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
	// Home is the user's home folder: where ~ leads in the files a call on the Mac runs.
	Home string
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
	// Woke, when set, is told the folder of a session something happened in (a call, a
	// transcript line, anything its watches saw), once between two housekeeping passes: the
	// injector looks at it in full at its next rescan too, so that a change no watch reported
	// (settings rewritten through a memory map) waits no longer than a rescan in a session in
	// use. It must not block.
	Woke func(dir string)
	// DropIn is the path of the managed-settings drop-in installed on this Mac ("" for none to
	// expect): while a file is there, every call of a session on the Mac must reach its hook
	// before the session's own, and one that does not is reported (drop_in_overridden).
	DropIn string
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
		o.SessionBytes = lane.SessionBytes
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

// Collector runs the pipeline for the sessions it tracks.
type Collector struct {
	opts   Options
	log    *slog.Logger
	env    *lane.Env
	pol    atomic.Pointer[lane.Policy]
	reconf chan struct{}
	commit chan struct{}

	// mu guards what follows: which sessions exist, what each is due to do, the watcher.
	mu       sync.Mutex
	sessions map[string]*entry // by session folder
	byBridge map[string]*entry // by the folder the watcher reports
	// byID finds a session by its folder's name (the host calls, the injector's quarantines).
	// Two roots may hold the same name; it holds one of them, and finds another when that one goes.
	byID  map[string]*entry
	queue chan *entry
	w     fswatch.Watcher
	// watching: w is a working watcher, whose silence about a session says something.
	watching bool
	stopped  bool
	// leaseUntil is the time the alive leases last written run to.
	leaseUntil time.Time
	// passes counts the passes run, for Passes.
	passes atomic.Uint64
}

// entry is the scheduler's view of one session, guarded by Collector.mu; the session's pass
// state is its lane's, reached only by the worker running the pass.
type entry struct {
	lane *lane.Lane
	// dir, id, bridge and chBridge are the lane's folders, fixed.
	dir, id, bridge, chBridge string

	queued, running, dirty bool
	gone                   bool
	// housekeep: the next pass renews the lease and sweeps.
	housekeep bool
	// channelDue: the next pass lists the host channel. A change seen in the session itself (a
	// spool, a transcript, a decision file) does not ask for it: listing an idle channel at each
	// event of a hook in the VM was a tenth of the daemon's work.
	channelDue bool
	// named are the request ids of event files the watcher saw come in the host channel: the
	// next pass takes them by name, one look each, instead of listing the channel.
	named []string
	// taken are the request ids last taken from the channel; waiting, those the watcher
	// reported while a pass was running, which start another pass only if that pass did not
	// take them.
	taken   takenRIDs
	waiting []string
	// reconcileDue: the next pass reads the transcripts. An event alone does not ask for it
	// while the transcripts' folders are all watched (covered): their changes ask for it.
	reconcileDue bool
	covered      bool
	// claudeWatched: the session's .claude folder, where the transcripts' folders are made, is
	// watched; tdirs are the transcript folders watched.
	claudeWatched bool
	tdirs         map[string]bool
	// watchedStamps are the folders of ours watched, as they were when each watch was added.
	watchedStamps map[string]session.Stamp
	// watching serialises watch: Track's call may have taken the watcher Run was about to
	// replace, and its failures, noted after Run's own call had succeeded, left the session
	// taken for unwatched (never calm) for good.
	watching sync.Mutex
	// cadence: the last housekeeping pass found the session Quiet with every folder of ours
	// watched (calm), and nothing has asked for a pass of it since; it says which rescans pass it
	// over. stirred: something asked for a pass since the running or last housekeeping pass began.
	cadence cadence.Schedule
	stirred bool
	// leaseUntil is what the session's lease was last written to run to; leaseChanged, that the
	// watcher reported a change to it while a pass ran (see leaseChanged).
	leaseUntil   time.Time
	leaseChanged bool
}

func newEntry(l *lane.Lane) *entry {
	return &entry{lane: l, dir: l.Dir(), id: l.ID(), bridge: l.Bridge(), chBridge: l.ChannelBridge()}
}

// Rules judges calls and reads instruction files for the collector (see Options.Rules).
type Rules = lane.Rules

// New returns a collector judging with cls under cfg (or with Options.Rules); Run starts it.
func New(cfg managedconfig.Config, cls *classifier.Classifier, opts Options) *Collector {
	opts.defaults()
	c := &Collector{
		opts: opts, log: opts.Logger, w: fswatch.Nop(), reconf: make(chan struct{}, 1), commit: make(chan struct{}, 1),
		sessions: map[string]*entry{}, byBridge: map[string]*entry{}, byID: map[string]*entry{},
		queue: make(chan *entry, opts.MaxSessions),
		env: &lane.Env{Log: opts.Logger, Health: opts.Health, Sink: opts.Sink, Offsets: opts.Offsets,
			Replays: lane.NewReplays(opts.Recorded), Now: opts.Now, Removals: opts.Removals,
			Leases: &lane.Leases{}, Outage: &lane.Outage{}, Host: opts.Host, User: opts.User, Home: opts.Home,
			DropIn: installed(opts.DropIn, opts.Now),
			Limits: lane.Limits{BatchLines: opts.BatchLines, RotateBytes: opts.RotateBytes, RotateIdle: opts.RotateIdle,
				RotateGrace: opts.RotateGrace, SessionBytes: opts.SessionBytes, BudgetRecords: opts.BudgetRecords,
				BudgetBytes: opts.BudgetBytes, QuarantineFor: opts.QuarantineFor, ReconcileGrace: opts.ReconcileGrace,
				ForgedAfter: opts.ForgedAfter}},
	}
	c.pol.Store(c.policy(cfg, cls))
	return c
}

// policy is cfg judged by Options.Rules when set, else by cls in this process.
func (c *Collector) policy(cfg managedconfig.Config, cls *classifier.Classifier) *lane.Policy {
	if c.opts.Rules != nil {
		return lane.NewPolicy(cfg, c.opts.Rules)
	}
	return lane.NewPolicy(cfg, lane.Local(cfg, cls, c.opts.Now, c.opts.Home))
}

// SetConfig puts a new configuration and classifier in force; the next line judged uses them.
func (c *Collector) SetConfig(cfg managedconfig.Config, cls *classifier.Classifier) {
	c.pol.Store(c.policy(cfg, cls))
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
	e, stopped, full := c.sessions[dir], c.stopped, len(c.sessions) >= c.opts.MaxSessions
	c.mu.Unlock()
	switch {
	case stopped:
		return
	case e != nil:
		c.schedule(e, true) // followed already: its pass renews the lease
		return
	case full:
		c.log.Warn("session limit reached; this session's spool is not followed", "session", filepath.Base(dir), "limit", c.opts.MaxSessions)
		return
	}
	// Prepared before anyone else can reach the lane, which is then no worker's yet.
	l := lane.New(c.env, dir, c.opts.ChannelRoot)
	until := c.leaseFor(c.opts.Now(), cadence.FirstRest)
	prepared := l.Prepare(until)
	c.mu.Lock()
	if c.sessions[dir] != nil || c.stopped || len(c.sessions) >= c.opts.MaxSessions {
		c.mu.Unlock()
		l.Release() // a concurrent Track won, or the collector stopped meanwhile
		return
	}
	e = newEntry(l)
	e.leaseUntil = until
	c.sessions[dir] = e
	if c.byID[e.id] == nil {
		c.byID[e.id] = e
	}
	c.byBridge[e.bridge] = e
	c.byBridge[filepath.Join(e.bridge, "decisions")] = e
	c.byBridge[filepath.Dir(e.bridge)] = e // .claude: a recreated bridge folder is watched at once
	if e.chBridge != "" {
		c.byBridge[e.chBridge] = e
	}
	c.mu.Unlock()
	c.watch(e)
	c.apply(e, prepared) // a lease put off by a removal comes back at the pass it asked for
	c.schedule(e, true)
}

// Untrack stops following the session named id (its folder's name): it is gone or no longer
// live. Its lease lapses by itself; its offsets are kept while the folder exists, in case it
// comes back.
func (c *Collector) Untrack(id string) {
	c.mu.Lock()
	e := c.byIDLocked(id)
	var tdirs []string
	if e != nil {
		e.gone = true
		delete(c.sessions, e.dir)
		c.forgetIDLocked(e)
		delete(c.byBridge, e.bridge)
		delete(c.byBridge, e.chBridge)
		delete(c.byBridge, filepath.Join(e.bridge, "decisions"))
		delete(c.byBridge, filepath.Dir(e.bridge))
		for d := range e.tdirs {
			delete(c.byBridge, d)
			tdirs = append(tdirs, d)
		}
	}
	w := c.w
	c.mu.Unlock()
	if e == nil {
		return
	}
	for _, d := range tdirs {
		_ = w.Remove(d)
	}
	_ = w.Remove(e.bridge) // fails harmlessly when the folder is already gone
	if e.chBridge != "" {
		_ = w.Remove(e.chBridge)
	}
	e.lane.Release()
	if _, err := os.Lstat(e.dir); errors.Is(err, fs.ErrNotExist) {
		if ch := e.lane.Channel(); ch != "" {
			// The session is gone: so are its hooks. Events still waiting were drained by
			// the last pass or belong to calls that never ran.
			if err := os.RemoveAll(ch); err != nil {
				c.log.Warn("cannot remove a gone session's host channel", "session", e.id, "err", err)
			}
		}
		for _, k := range c.opts.Offsets.Keys(lane.OffsetPrefix(e.dir)) {
			c.opts.Offsets.Forget(k)
		}
		c.requestCommit()
	}
}

// Stir tells the collector that something changed in the session named id (its folder's name)
// where its own watches do not look (the injector's do): its next rescan housekeeps it.
func (c *Collector) Stir(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byIDLocked(id); e != nil {
		c.stirLocked(e)
	}
}

// Quarantine denies every further call in the session named id (its folder's name) for
// QuarantineFor from now: something in it tried to switch the guard off or fool it (the
// injector saw it). Each new attempt starts the period again.
func (c *Collector) Quarantine(id, reason string) {
	c.mu.Lock()
	e := c.byIDLocked(id)
	if e != nil {
		c.stirLocked(e) // even during a pass that found it quiet: the quarantine came after
	}
	c.mu.Unlock()
	if e == nil {
		lane.Quarantined(c.env, id, reason, c.opts.Now().Add(c.opts.QuarantineFor))
		return
	}
	e.lane.Quarantine(reason)
}

// HostLane is what a system-mode daemon judging a host call of a session needs of its lane,
// without files: the session's quarantine ("" when none), its flow, and a way to hand over the
// call's receipt (for reconciliation and the flow).
type HostLane struct {
	Quarantined string
	Flow        flow.State
	Judged      func(claudehook.Receipt)
}

// HostCall is the lane of session id for a host call; ok is false for a session the collector
// does not track.
func (c *Collector) HostCall(id string) (HostLane, bool) {
	c.mu.Lock()
	e := c.byIDLocked(id)
	c.mu.Unlock()
	if e == nil {
		return HostLane{}, false
	}
	judged := func(r claudehook.Receipt) {
		e.lane.HostJudged(r)
		c.mu.Lock()
		c.stirLocked(e) // a call: the session is in use
		c.mu.Unlock()
	}
	return HostLane{Quarantined: e.lane.QuarantinedNow(), Flow: e.lane.FlowNow(), Judged: judged}, true
}

// byIDLocked finds a tracked session by its folder's name. Callers hold mu.
func (c *Collector) byIDLocked(id string) *entry { return c.byID[id] }

// forgetIDLocked takes e, no longer tracked, out of byID, and puts in its place another session
// of the same name if one is tracked (the only time the sessions are scanned). Callers hold mu.
func (c *Collector) forgetIDLocked(e *entry) {
	if c.byID[e.id] != e {
		return
	}
	delete(c.byID, e.id)
	for _, other := range c.sessions {
		if other.id == e.id {
			c.byID[e.id] = other
			return
		}
	}
}

// Sessions is the number of sessions tracked.
func (c *Collector) Sessions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

// schedule queues a full pass of e (spool, transcripts, host channel), or marks it for one more
// if it is being run now.
func (c *Collector) schedule(e *entry, housekeep bool) {
	c.scheduleFor(e, lane.Again{Housekeep: housekeep, Reconcile: true, Channel: true})
}

// scheduleFor queues the pass a asks for (its After aside).
func (c *Collector) scheduleFor(e *entry, a lane.Again) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.enqueueLocked(e, a)
}

// enqueueLocked notes what e's next pass does and queues it: something happened in the session,
// which is no longer calm. Callers hold mu.
func (c *Collector) enqueueLocked(e *entry, a lane.Again) {
	c.stirLocked(e)
	c.queueLocked(e, a)
}

// stirLocked notes that something happened in e: it is not calm, and the housekeeping pass
// running, if any, cannot make it so. The first stir since that pass began is told to
// Options.Woke: at most once a rescan for a session in use, calm or not in the collector's eyes
// (the injector's rest of it is its own). Callers hold mu.
func (c *Collector) stirLocked(e *entry) {
	if !e.stirred && c.opts.Woke != nil {
		c.opts.Woke(e.dir)
	}
	e.cadence.Stir()
	e.stirred = true
}

// housekeepLocked queues a housekeeping pass of e that time asks for. Callers hold mu.
func (c *Collector) housekeepLocked(e *entry) {
	c.queueLocked(e, lane.Again{Housekeep: true, Reconcile: true, Channel: true})
}

// queueLocked is enqueueLocked for the passes that time asks for (the rescan, a lease due), which
// leave the session as calm as it was. Callers hold mu.
func (c *Collector) queueLocked(e *entry, a lane.Again) {
	if e.gone || c.stopped {
		return
	}
	e.reconcileDue = e.reconcileDue || a.Reconcile
	e.housekeep = e.housekeep || a.Housekeep
	e.channelDue = e.channelDue || a.Channel
	switch {
	case e.running:
		e.dirty = true
	case !e.queued:
		e.queued = true
		c.queue <- e // never blocks: each session is queued at most once and the queue holds them all
	}
}

// scheduleChannel is schedule for an event file seen in e's host channel: one the last pass took
// starts no pass, and while a pass runs it is noted for work to look at when the pass is done.
func (c *Collector) scheduleChannel(e *entry, rid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case e.gone || c.stopped || e.taken.has(rid):
	case e.running && len(e.waiting) < takenMax:
		e.waiting = append(e.waiting, rid)
	case e.running:
		c.enqueueLocked(e, lane.Again{Reconcile: true, Channel: true}) // more than it can follow by name: the next pass lists them
	default:
		e.name(rid)
		c.enqueueLocked(e, lane.Again{})
	}
}

// name notes an event file for the next pass to take by name; past takenMax of them, that pass
// lists the channel instead. Callers hold mu.
func (e *entry) name(rid string) {
	switch {
	case slices.Contains(e.named, rid):
	case len(e.named) < takenMax:
		e.named = append(e.named, rid)
	default:
		e.channelDue = true
	}
}

// work is what the next pass of e does, taken under mu as the pass starts: a housekeeping pass
// lists the channel and reads the transcripts too, and renews the lease.
func (c *Collector) workLocked(e *entry) lane.Work {
	w := lane.Work{Policy: c.pol.Load(), Housekeep: e.housekeep, Reconcile: e.reconcileDue || e.housekeep, Covered: e.covered,
		Channel: lane.ChannelWork{List: e.channelDue || e.housekeep, Named: e.named}}
	e.housekeep, e.reconcileDue, e.channelDue, e.named = false, false, false, nil
	if w.Housekeep {
		w.Lease.Until = c.leaseForLocked(c.opts.Now(), e.cadence.Longest())
		e.leaseUntil, e.stirred = w.Lease.Until, false
	}
	w.Lease.Max = c.leaseUntil
	return w
}

// rescan is the periodic safety net: every session is housekept, a calm one only at the end of
// its rest (see package cadence). A session that did anything since its last housekeeping, or
// whose folders are not all watched, is housekept at every rescan. An idle session's
// housekeeping (its lease, sweeps, instruction files, a look at each folder of ours) was most of
// what an idle daemon spent; the watcher reports any change the next one would find, and the
// rescan stays the net for what it missed, a few rescans later. The lease runs long enough to
// last from one to the next (leaseLength).
func (c *Collector) rescan() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.sessions {
		if !e.cadence.Pass() {
			c.housekeepLocked(e)
		}
	}
}

// RenewDue is what a collector run with Options.ClockTold is told when the wall clock has run
// ahead of the timers (a Mac woke from sleep, or its clock was set forward): the sessions whose
// lease runs out within a rescan are housekept at once.
func (c *Collector) RenewDue() { c.renewDue() }

// renewDue housekeeps the sessions whose lease runs out within a rescan: a rescan late or lost
// (a Mac that slept: timers lag the clock) must not let a lease lapse under a session in use.
func (c *Collector) renewDue() {
	c.mu.Lock()
	defer c.mu.Unlock()
	soon := c.opts.Now().Add(c.rescanEvery())
	for _, e := range c.sessions {
		if e.leaseUntil.Before(soon) {
			c.housekeepLocked(e)
		}
	}
}

// settleLocked notes what a housekeeping pass of e found, as the pass ends. Callers hold mu.
func (c *Collector) settleLocked(e *entry, quiet bool) {
	e.cadence.Looked(quiet && !e.stirred && c.watching && c.watchesAllLocked(e))
}

// watchesAllLocked reports whether every folder the watcher must cover for e to be calm is
// watched: ours in the session and in its host channel, .claude and the transcripts' folders.
func (c *Collector) watchesAllLocked(e *entry) bool {
	if !e.claudeWatched || !e.covered || len(e.watchedStamps) < 3 {
		return false
	}
	_, ch := e.watchedStamps[e.chBridge]
	return e.chBridge == "" || ch
}

func (c *Collector) scheduleAll(housekeep bool) {
	c.mu.Lock()
	all := c.trackedLocked()
	c.mu.Unlock()
	for _, e := range all {
		c.schedule(e, housekeep)
	}
}

// trackedLocked lists the tracked sessions, for work done outside the lock. Callers hold mu.
func (c *Collector) trackedLocked() []*entry {
	all := make([]*entry, 0, len(c.sessions))
	for _, e := range c.sessions {
		all = append(all, e)
	}
	return all
}

func (c *Collector) requestCommit() {
	select {
	case c.commit <- struct{}{}:
	default: // one is pending and will cover this
	}
}

// takenMax is how many request ids a session remembers as taken from its host channel.
const takenMax = 32

// takenRIDs are the request ids last taken from a host channel, so that the watcher's later
// events for their files (a hook's write seen after the pass that took the file) start no pass.
// Guarded by Collector.mu.
type takenRIDs struct {
	rids [takenMax]string
	next int
}

func (r *takenRIDs) add(rid string) {
	r.rids[r.next] = rid
	r.next = (r.next + 1) % takenMax
}

func (r *takenRIDs) has(rid string) bool {
	for _, x := range r.rids {
		if x == rid {
			return true
		}
	}
	return false
}

// installedFor is how long the answer of installed stands: the drop-in is installed or removed
// by an admin, rarely, and the lanes ask for every call on the Mac.
const installedFor = 30 * time.Second

// installed reports whether a plain file is at path, looking at most once per installedFor;
// nil for no path. Safe for concurrent use by the lanes.
func installed(path string, now func() time.Time) func() bool {
	if path == "" {
		return nil
	}
	var mu sync.Mutex
	var at time.Time
	var ok bool
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		if t := now(); at.IsZero() || t.Sub(at) > installedFor {
			fi, err := os.Stat(path)
			at, ok = t, err == nil && fi.Mode().IsRegular()
		}
		return ok
	}
}
