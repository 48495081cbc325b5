// Package lane runs one session's pass of the collector: it reads what the session's spool and
// host channel hold, judges each event, answers a waiting hook, records the event in the decision
// log, advances the offsets, and reconciles the transcripts with what was judged. A Lane owns its
// session's state and takes no lock over it: the collector's scheduler hands a lane to one worker
// at a time. What a pass needs from outside comes in its Work; what it wants done beyond its
// session (run again later, commit the offsets, watch the transcripts' folders) goes out in its
// Result, so that a lane never calls back into the scheduler.
//
// A lane has a door for each way its session's calls arrive, each in its own file and each
// embedding the lane for what they share (judging through package judgement, answering,
// recording): the spool (spoolDoor, spool.go), the host channel (channelDoor, channel.go) and
// the receipts a system daemon hands over from its socket (socketDoor, receipts.go).
//
// It does not decide when a session is drained, watch files, or keep the list of sessions: that
// is the collector's. The few parts a lane shares with others (the quarantine a session is under,
// its plants watch, its kept folder handles) carry their own locks beside their fields.
package lane

import (
	"context"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coworkbridge/coworkbridge/flow"
	"github.com/coworkbridge/coworkbridge/judgement"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/collector/internal/flood"
	"github.com/coworkbridge/coworkbridge/collector/internal/instructions"
	"github.com/coworkbridge/coworkbridge/collector/internal/plants"
	"github.com/coworkbridge/coworkbridge/decisions"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/internal/realpath"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// Health receives a lane's counts; *health.Health implements it.
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

// Limits are the bounds and periods a pass works within (see collector.Options for each).
type Limits struct {
	BatchLines                  int
	RotateBytes                 int64
	RotateIdle, RotateGrace     time.Duration
	SessionBytes                int64
	BudgetRecords               int
	BudgetBytes                 int64
	QuarantineFor               time.Duration
	ReconcileGrace, ForgedAfter time.Duration
}

// Env is what every lane shares: the daemon's dependencies, each safe for concurrent use.
type Env struct {
	Log     *slog.Logger
	Health  Health
	Sink    Sink
	Offsets *spool.Store
	Replays *Replays
	Now     func() time.Time
	Limits  Limits
	// Removals records removals going on in sessions (shared with the injector).
	Removals *session.Removals
	// Leases lets shutdown withdraw the alive leases with none written after.
	Leases *Leases
	// Outage says once when the decision log starts and stops failing.
	Outage *Outage
	// Kept counts the folder handles the lanes keep open (see keptHandle).
	Kept atomic.Int32
	// Host and User fill the {host} and {user} of an admin's notice.
	Host, User string
	// Home is the user's home folder: where ~ leads in the files a call on the Mac runs.
	Home string
	// DropIn reports whether a managed-settings drop-in is installed on this Mac, so that every
	// session's calls on the Mac must reach its hook (nil: none is).
	DropIn func() bool
}

// Rules judges a lane's calls and reads its instruction files: Local in a daemon that compiled
// the policy itself, or a system-mode worker's link to root, which judges for it (root keeps the
// policy and the record; the worker, as the user, works out where the user's links lead).
type Rules interface {
	Decide(ctx context.Context, c judgement.Call) judgement.Outcome
	Refuse(c judgement.Call, rule, reason string) judgement.Outcome
	instructions.Finder
}

// Policy is what judging needs, swapped whole on a configuration change.
type Policy struct {
	Cfg   managedconfig.Config
	Rules Rules
}

// identitiesFor is how long the identities of the protected places are trusted: a place made,
// or a log rotated, since is known by its identity within that time.
const identitiesFor = 10 * time.Second

// NewPolicy is the policy of cfg, judged by rules.
func NewPolicy(cfg managedconfig.Config, rules Rules) *Policy {
	return &Policy{Cfg: cfg, Rules: rules}
}

// Local is cls judging in this process, on the clock now: every lane shares its cache of the
// protected places' identities, and the Mac's links are followed here. home is the user's: where
// the secret folders the read rules name (~/.ssh) are.
func Local(cfg managedconfig.Config, cls *classifier.Classifier, now func() time.Time, home string) Rules {
	places := &realpath.Cache{For: identitiesFor, Now: now, Places: cls.PlacePaths, Secrets: cls.SecretFolders, Home: home}
	return local{Judge: judgement.Judge{Cfg: cfg, Rules: cls, Links: filepath.EvalSymlinks, Places: places.Get, Now: now}, cls: cls}
}

type local struct {
	judgement.Judge
	cls *classifier.Classifier
}

func (l local) InstructionFindings(text string) []classifier.Verdict {
	return l.cls.InstructionFindings(text)
}

// Lease is where the alive leases stand as a pass starts.
type Lease struct {
	// Until is what a lease written by this pass runs to; zero on a pass that writes none.
	Until time.Time
	// Max is the furthest any lease written runs to: a lease past it is a plant.
	Max time.Time
}

// Work is what the scheduler asks of one pass.
type Work struct {
	Policy *Policy
	Lease  Lease
	// Housekeep renews the lease, sweeps, scans the instruction files and reads every spool.
	Housekeep bool
	// Reconcile reads the transcripts.
	Reconcile bool
	// Covered: the scheduler watches every transcript folder the last reading named, so only a
	// change it reports asks for them to be read.
	Covered bool
	// Channel is what to take from the host channel.
	Channel ChannelWork
}

// ChannelWork is what a pass takes from the host channel: every event file waiting (List), or
// only those the watcher named. Listing is for the passes that may meet files no event told of:
// the first, the rescans, a watcher that lost events, more files than are followed by name.
type ChannelWork struct {
	List  bool
	Named []string
}

// Again is a pass the lane wants run later.
type Again struct {
	After time.Duration
	// Housekeep, Reconcile, Channel: what that pass does beyond reading the spool if it moved.
	Housekeep, Reconcile, Channel bool
}

// Result is what a pass wants done beyond its session.
type Result struct {
	// Commit: offsets or notes changed; make them durable.
	Commit bool
	// Again are the later passes asked for.
	Again []Again
	// Read: the pass read the transcripts; Dirs are their folders (relative to the session)
	// and More says some were left for another reading.
	Read bool
	Dirs []string
	More bool
	// Taken are the request ids of the event files taken from the host channel.
	Taken []string
	// Rewatch: the pass renewed the lease, and our folders in the session may have been made
	// again; watch them anew.
	Rewatch bool
	// Quiet: a housekeeping pass found nothing new in the session and leaves nothing waiting
	// for time to pass (a grace, a backoff, a file to age, a quarantine to lift). Until the
	// watcher reports a change in it, its next housekeeping finds the same, so the scheduler may
	// put it off (see collector's calm sessions).
	Quiet bool
}

// Lane is one session's state, owned by the worker running its pass.
type Lane struct {
	env *Env
	// Fixed at New.
	dir, id, bridge string
	// The session's doors: its spool, its host channel (each embeds the lane for what they share),
	// and the receipts of the calls judged on the Mac.
	spooled spoolDoor
	channel channelDoor

	// q is the quarantine the session is under; its own lock (the scheduler sets it too).
	q quarantine
	// flow is what the session took in and read (package flow), restored from its note at the
	// lane's first judgement and kept beside the offsets.
	flowMu    sync.Mutex
	flow      flow.State
	flowReady bool
	// open is the session folder during a pass, nil outside one.
	open *session.Session
	// socket takes the receipts of the session's calls a system daemon judged (HostJudged).
	socket socketDoor
	// plants tells our writes in the bridge folder from the agent's; its own lock (the watcher
	// feeds it).
	plants plants.Watch
	// sess is the session folder, kept open between passes while the session is busy (see
	// keptHandle); its own lock (shutdown releases it).
	sess keptHandle

	// Everything below belongs to the pass.
	res Result
	// leaseMax is Work.Lease.Max of the pass.
	leaseMax time.Time
	// decided: decisions written whose telemetry is not yet in, so a retry does not write again.
	decided map[string]time.Time
	// recon reconciles the transcript with the events judged.
	recon *reconciler
	// instr is what the last scan of the session's instruction files saw.
	instr instructions.Scan
	// flood is this minute's use of the decision log.
	flood flood.Window
	// overflow are records the budget left out, until a transcript shows their call.
	overflow heldRecords
	// tier watches whether the session's calls on the Mac reach the drop-in.
	tier tier
	// rids are the request ids recorded lately, to catch a line reusing one.
	rids     plants.RIDs
	failures int       // consecutive decision-log failures, for the retry backoff
	retryAt  time.Time // no decision-log write before then
	// window bounds the lines of the next batch (0: BatchLines). A failed write drops it to one
	// line and each success doubles it, so that a retry after a full disk writes what the freed
	// space holds instead of retrying a whole batch that refills it and stalls.
	window int
	// heldUntil: a housekeeping pass put off by a removal in progress is due then; prepared:
	// our folder was made in the session once; bridgeGone: when it was first found gone since.
	heldUntil  time.Time
	prepared   bool
	bridgeGone time.Time
	// leaseStamp is the session's lease as this lane last wrote it, or read and found ours,
	// through one handle: found so again, it needs no reading (see verifyLease). It is read by
	// the collector's event loop too (OwnLease), hence its lock.
	leaseMu    sync.Mutex
	leaseStamp session.Stamp
	// swept are the session's folders its last sweeps found nothing in to wait for.
	swept decisions.Swept
	// stirred: this pass found something in the session (a rotated spool, an instruction file
	// changed, a file swept or left to age, a plant), so it is not Quiet.
	stirred bool
}

// OwnLease reports whether fi, the session's lease as found now, is the lease this lane last
// wrote or checked, unchanged since: the change the watcher reported was the lane's own renewal,
// which needs no pass.
func (l *Lane) OwnLease(fi fs.FileInfo) bool {
	st := session.StampOf(fi)
	return st != (session.Stamp{}) && st == l.ownLease()
}

func (l *Lane) ownLease() session.Stamp {
	l.leaseMu.Lock()
	defer l.leaseMu.Unlock()
	return l.leaseStamp
}

func (l *Lane) setOwnLease(st session.Stamp) {
	l.leaseMu.Lock()
	l.leaseStamp = st
	l.leaseMu.Unlock()
}

// New is the lane of the session in folder dir; channelRoot holds the sessions' host channels
// (see session.ChannelDir), empty for none.
func New(env *Env, dir, channelRoot string) *Lane {
	l := &Lane{env: env, dir: dir, id: filepath.Base(dir), bridge: filepath.Join(dir, filepath.FromSlash(session.BridgeDir)),
		decided: map[string]time.Time{}, recon: newReconciler(time.Now(), env.Limits.SessionBytes)}
	l.spooled = spoolDoor{Lane: l, partial: map[string]spool.Partial{}}
	l.channel = channelDoor{Lane: l}
	if channelRoot != "" {
		l.channel.dir = session.ChannelDir(channelRoot, l.id)
		l.channel.bridge = filepath.Join(l.channel.dir, filepath.FromSlash(session.BridgeDir))
	}
	return l
}

// Dir, ID, Bridge, Channel and ChannelBridge name the lane's folders (the last two "" without
// a host channel).
func (l *Lane) Dir() string           { return l.dir }
func (l *Lane) ID() string            { return l.id }
func (l *Lane) Bridge() string        { return l.bridge }
func (l *Lane) Channel() string       { return l.channel.dir }
func (l *Lane) ChannelBridge() string { return l.channel.bridge }

// Plants is the session's watch of our writes and the agent's, fed by the watcher.
func (l *Lane) Plants() *plants.Watch { return &l.plants }

// Release closes the folder handles the lane keeps; a later pass opens them again.
func (l *Lane) Release() {
	l.channel.kept.release(&l.env.Kept)
	l.sess.release(&l.env.Kept)
}

// again asks for a later pass.
func (l *Lane) again(a Again) { l.res.Again = append(l.res.Again, a) }

// Replays are the request ids already in the decision log when the daemon started: lines
// replayed because a crash came before their offsets were committed are skipped, not doubled.
type Replays struct {
	mu  sync.Mutex
	ids map[string]bool
}

// NewReplays takes ownership of ids.
func NewReplays(ids map[string]bool) *Replays { return &Replays{ids: ids} }

// Take reports whether rid was recorded before the start, at most once.
func (r *Replays) Take(rid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ids[rid] {
		return false
	}
	delete(r.ids, rid)
	return true
}

// Leases is the gate between the lanes writing alive leases and the shutdown withdrawing them.
type Leases struct {
	mu        sync.RWMutex
	withdrawn bool
}

// write runs fn unless the leases were withdrawn, and holds the withdrawal off until it is done.
func (g *Leases) write(fn func()) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.withdrawn {
		fn()
	}
}

// Withdraw stops every later lease; the caller then removes those written.
func (g *Leases) Withdraw() {
	g.mu.Lock()
	g.withdrawn = true
	g.mu.Unlock()
}
