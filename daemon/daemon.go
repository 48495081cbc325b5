// Package daemon is the long-running process of one user: it holds the per-user lock, follows
// managed.json, and while coworkbridge is on runs the injector and the collector over the
// sessions roots, with the health heartbeat beside them. Every change of configuration takes
// effect in one place (switching on and off, moving roots or the decision log, a broken file or
// policy).
//
// It does not parse flags, print for people, or install itself; cmd/coworkbridge does. Nor does it
// judge calls or touch session files itself: the collector, injector and classifier do.
package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/coworkbridge/coworkbridge/internal/metronome"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/collector"
	"github.com/coworkbridge/coworkbridge/dropin"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/hosthook"
	"github.com/coworkbridge/coworkbridge/hostsocket"
	"github.com/coworkbridge/coworkbridge/injector"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/managedconfig/watch"
	"github.com/coworkbridge/coworkbridge/policy"
	"github.com/coworkbridge/coworkbridge/privsep"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// recentLogBytes is how much of the decision log's end is read at start to skip replayed events.
const recentLogBytes = 8 << 20

// Options are what the daemon needs besides its environment.
type Options struct {
	// Logger receives the daemon's log; required.
	Logger *slog.Logger
	// Level is Logger's level, set from managed.json's log_level; nil: the level stays as it is.
	Level *slog.LevelVar
	// Version is this build's, for the log, health.json and decision-log records.
	Version string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// DropInDir is the Claude Code managed-settings folder whose drop-in the daemon checks;
	// "": the platform's (dropin.Dir).
	DropInDir string
	// Executable is the binary the drop-in must run, and system mode's workers run; "": this
	// process's, links resolved.
	Executable string
	// Users lists the people system mode's workers serve; nil: privsep.People on this platform.
	Users func() ([]privsep.User, error)
	// WorkerEnv is added to each worker's environment: a development build's profiles only.
	WorkerEnv []string
}

// Daemon is the long-running process of one user. Run it once; Close it after Run returns.
type Daemon struct {
	log     *slog.Logger
	level   *slog.LevelVar
	version string
	now     func() time.Time
	// metro is the daemon's metronome: its periodic work (rescans, lease checks, the config
	// check, drop imports, heartbeats) wakes it together rather than each on its own.
	metro   *metronome.Metronome
	release func() // the per-user lock
	env     managedconfig.Env
	paths   managedconfig.Paths
	loader  *managedconfig.Loader
	// configWatch delivers the loader's configuration again as it changes.
	configWatch *watch.Watch
	// current is the configuration in force; only Run's goroutine touches it.
	current managedconfig.Snapshot
	// guard is the running session machinery, nil while coworkbridge is off.
	guard   *guard
	health  *health.Health
	offsets *spool.Store
	// policy keeps the last classifier compiled without error, for when a later policy is broken.
	policy policy.Keeper
	beat   *heartbeat
	kick   chan struct{} // SIGUSR1: write health.json now
	// dropped: a host call's record went to the state's drop folder (the log could not take
	// it then); Run imports it as soon as it can, not at the next tick.
	dropped chan struct{}
	// watching is the running guard's parts, for the heartbeat's count of watches (it runs in its
	// own goroutine, so it cannot look at guard).
	watching atomic.Pointer[guard]
	// stamp is what decision-log records say of where they come from; only Run's goroutine
	// touches it.
	stamp telemetry.Stamp
	// dropIn is what the installed drop-in is checked against; set by Run's goroutine, read by
	// the heartbeat's.
	dropIn atomic.Pointer[dropInWant]
	// importing serialises imports of the drop folders (Run's loop, the heartbeat's goroutine),
	// so that no dropped file is read by both and logged twice.
	importing    sync.Mutex
	dropDir, exe string
	// serving is what host calls over the socket are judged under (system mode).
	serving atomic.Pointer[serving]
	started atomic.Pointer[time.Time]
	// hostRecs queues the host calls' records for their writer (system mode); hostWriting is
	// held by the caller writing them (see recordHostCall).
	hostRecs    chan hostRecord
	hostWriting sync.Mutex
	// workerPolicy is the configuration system mode's workers' calls are judged under, each
	// user's policy made from it by callers; set with each configuration, before the workers hear.
	workerPolicy atomic.Pointer[hosthook.Serving]
	// callers judges calls by each user's policy (system mode): the socket's, and the workers'.
	callers *hosthook.Callers
	// users lists the people system mode serves, a worker each.
	users func() ([]privsep.User, error)
	// workerEnv is added to each worker's environment (Options.WorkerEnv).
	workerEnv []string
	// homes are the served people's homes as last listed, for homesFresh.
	homesMu sync.Mutex
	homesAt time.Time
	homesOf []string
}

// recordTampered reports what was done to the decision log behind the daemon's back, in the
// daemon log, in health and as a record in the log itself.
func (d *Daemon) recordTampered(tlog *telemetry.Log, mode managedconfig.Mode, problem string) {
	d.log.Error("the decision log was changed behind the daemon's back", "code", health.CodeRecordTampered, "problem", problem)
	// The record first: whoever sees the count finds the record of it in the log.
	err := tlog.Write(judgement.Tampered(time.Now(), mode, problem))
	if err != nil {
		d.health.Count("", health.CodeTelemetryFailed)
		d.log.Warn("cannot record the tampering in the decision log", "code", health.CodeTelemetryFailed, "err", err)
	}
	d.health.Count("", health.CodeRecordTampered)
}

// recordHead checks the decision log's chain for the heartbeat and returns its head.
func (d *Daemon) recordHead() *health.RecordHead {
	d.importDropped()
	g := d.watching.Load()
	if g == nil {
		return nil
	}
	h, _, err := g.log.Check()
	if err != nil {
		if d.watching.Load() == g { // not a guard stopping under us
			d.log.Warn("cannot check the decision log's chain", "code", health.CodeTelemetryFailed, "err", err)
		}
		return nil
	}
	return &health.RecordHead{Log: h.File, Head: h.Hash, Size: h.Size, CheckedAt: time.Now()}
}

// watches counts every folder the daemon watches now: the guard's (its workers', as they last
// said) and the config watcher's.
func (d *Daemon) watches() int {
	n := d.configWatch.Watches()
	switch g := d.watching.Load(); {
	case g == nil:
	case g.workers != nil:
		n += g.workers.Told().Watches
	default:
		n += g.injector.Watches() + g.collector.Watches()
	}
	return n
}

// heartbeat is the running health heartbeat and the interval it was started with.
type heartbeat struct {
	interval time.Duration
	cancel   context.CancelFunc
	done     chan error
}

// guard is the part of the daemon that runs only while coworkbridge is on: the injector keeps the
// hooks in place, the collector answers them. In system mode both run in the users' workers
// instead, one per user and as that user, which root judges and records for.
type guard struct {
	injector  *injector.Injector
	collector *collector.Collector
	workers   *privsep.Supervisor
	tuning    workerTuning
	log       *telemetry.Log
	roots     []string
	telemetry managedconfig.Telemetry
	cancel    context.CancelFunc
	done      chan error // the first of the two to end
	running   sync.WaitGroup
}

// sessionEvents tells health, and the collector, what the injector finds. The collector writes a
// session's alive lease inside SessionSeen, before the injector puts the hook in place.
type sessionEvents struct {
	*health.Health
	c *collector.Collector
}

func (e sessionEvents) SessionSeen(id, dir string) {
	e.Health.SessionSeen(id, dir)
	e.c.Track(dir)
}

// SessionTampered quarantines the session; health hears of it from the collector.
func (e sessionEvents) SessionTampered(id string, what []string) {
	e.c.Quarantine(id, strings.Join(what, "; "))
}

// SettingsRepaired counts the repair; the injector's log line says what was undone.
func (e sessionEvents) SettingsRepaired(id string, _ []string) {
	e.Health.Count(id, health.CodeSettingsRepaired)
}

func (e sessionEvents) SessionGone(id string) {
	e.Health.SessionGone(id)
	e.c.Untrack(id)
}

// SessionChanged: the collector's next rescan housekeeps the session (its instruction files).
func (e sessionEvents) SessionChanged(id string) { e.c.Stir(id) }

var (
	_ injector.Recorder = sessionEvents{}
	_ collector.Health  = (*health.Health)(nil)
)

// New resolves the daemon's folders for env and takes the per-user lock: a second daemon of the
// same user gets an *AlreadyRunningError. Close releases the lock.
func New(env managedconfig.Env, opts Options) (*Daemon, error) {
	if opts.Logger == nil {
		return nil, errors.New("daemon: no logger")
	}
	if opts.Level == nil {
		opts.Level = new(slog.LevelVar)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	paths, err := env.Paths()
	if err != nil {
		return nil, err
	}
	if env.System {
		if err := systemFolders(paths); err != nil {
			return nil, fmt.Errorf("system mode: %w", err)
		}
	} else if err := os.MkdirAll(paths.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("create state folder %s: %w", paths.StateDir, err)
	}
	release, err := Lock(paths.LockFile())
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	offsets, err := spool.OpenStore(paths.OffsetsFile())
	if err != nil {
		log.Error("spool offsets unreadable; events still in the spools will be read again (duplicates are skipped by request id)", "err", err)
	}
	if opts.DropInDir == "" {
		opts.DropInDir = cmp.Or(env.DropInDirOverride(), dropin.Dir(runtime.GOOS))
	}
	if opts.Executable == "" {
		opts.Executable = executable()
	}
	if opts.Users == nil {
		goos, under := env.GOOS, env.PeopleUnder()
		opts.Users = func() ([]privsep.User, error) {
			people, err := privsep.People(goos)
			if under != "" {
				people = slices.DeleteFunc(people, func(u privsep.User) bool { return !strings.HasPrefix(u.Home, under+"/") })
			}
			return people, err
		}
	}
	d := &Daemon{log: log, level: opts.Level, version: opts.Version, now: opts.Now, metro: metronome.New(), release: release, env: env, paths: paths,
		loader: managedconfig.NewDaemonLoader(env, paths), health: health.New(opts.Now), offsets: offsets,
		kick: make(chan struct{}, 1), dropped: make(chan struct{}, 1), dropDir: opts.DropInDir, exe: opts.Executable,
		users: sharedListing(opts.Users, time.Second), workerEnv: opts.WorkerEnv}
	d.configWatch = watch.New(d.loader)
	if env.System {
		d.callers = &hosthook.Callers{Env: env, Paths: paths, View: d.hostView, MaxRequest: hostsocket.MaxRequest}
	}
	// Today's counts go on across a restart: the last health.json holds them.
	if prev, err := health.ReadSnapshot(paths.HealthFile()); err == nil {
		d.health.Resume(prev.Today)
	}
	return d, nil
}

// sharedListing is list, asked at most once within each window: the supervisor's rescan and the
// socket's list of users tick on the same beat, and on a Mac a listing asks Directory Services
// about every user of /Users. A failed listing is not shared; each caller gets its own copy.
func sharedListing(list func() ([]privsep.User, error), window time.Duration) func() ([]privsep.User, error) {
	var (
		mu   sync.Mutex
		at   time.Time
		last []privsep.User
	)
	return func() ([]privsep.User, error) {
		mu.Lock()
		defer mu.Unlock()
		if last == nil || time.Since(at) >= window {
			us, err := list()
			if err != nil {
				return nil, err
			}
			last, at = us, time.Now()
			if last == nil {
				last = []privsep.User{}
			}
		}
		return slices.Clone(last), nil
	}
}

// Close releases the per-user lock. Call it once Run has returned.
func (d *Daemon) Close() error {
	d.release()
	return nil
}

// Health is the daemon's state as status reports it, without the daemon's own details.
func (d *Daemon) Health() health.Snapshot { return d.health.Snapshot(false) }

// Run loads the configuration, follows its changes, and returns nil once ctx is cancelled.
func (d *Daemon) Run(ctx context.Context) error {
	started := d.now()
	d.started.Store(&started)
	d.current = d.loader.Load()
	d.logStart()
	d.apply(ctx, managedconfig.Snapshot{}, d.current)
	defer d.stopGuard()
	d.startHeartbeat(ctx, started)
	defer d.stopHeartbeat()
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)

	sockDone, stopSocket, err := d.listen(ctx)
	if err != nil {
		return err
	}
	defer stopSocket() // before the guard stops: the host calls' records go to its log
	// A hook leaves its record in the drop folder when the log is due to rotate (the daemon's
	// to do) or its lock is held: imported soon, not only at the next heartbeat.
	imports := d.metro.Ticker(dropImportInterval)
	defer imports.Stop()
	var importSoon <-chan time.Time
	changes := make(chan managedconfig.Snapshot)
	watchDone := make(chan error, 1)
	opts := watch.Options{Poll: d.current.Config.RescanInterval, Beat: d.metro, Logger: d.log}
	go func() {
		watchDone <- d.configWatch.Run(ctx, d.current, opts, func(s managedconfig.Snapshot) {
			select {
			case changes <- s:
			case <-ctx.Done():
			}
		})
	}()
	for {
		select {
		case <-ctx.Done():
			err := <-watchDone
			d.log.Info("coworkbridge stopped", "uptime_s", int64(d.now().Sub(started).Seconds()))
			return err
		case s := <-changes:
			prev := d.current
			d.current = s
			d.apply(ctx, prev, s)
			if d.beat.interval != s.Config.HeartbeatInterval {
				d.stopHeartbeat()
				d.startHeartbeat(ctx, started)
			}
		case <-imports.C:
			d.importDropped()
		case <-d.dropped:
			// Drops come in bursts (a full disk, a guard restarting): one import a second at
			// most, and with no guard now, the apply that starts one imports them.
			if importSoon == nil {
				importSoon = time.After(dropImportSoon)
			}
		case <-importSoon:
			importSoon = nil
			d.importDropped()
		case <-usr1:
			select {
			case d.kick <- struct{}{}:
			default: // one is already pending
			}
		case err := <-watchDone:
			if ctx.Err() != nil { // the watcher saw the signal first
				d.log.Info("coworkbridge stopped", "uptime_s", int64(d.now().Sub(started).Seconds()))
				return err
			}
			if err == nil {
				err = errors.New("config watcher ended unexpectedly")
			}
			return err
		case err := <-sockDone:
			if ctx.Err() != nil {
				continue
			}
			return fmt.Errorf("host hooks' socket: %w", err)
		case err := <-d.guardDone():
			d.stopGuard() // one part ended; the other has been told to
			if ctx.Err() != nil {
				continue // shutting down: the Done case ends the loop
			}
			if err == nil {
				err = errors.New("ended unexpectedly")
			}
			return fmt.Errorf("session guard: %w", err)
		}
	}
}

func (d *Daemon) logStart() {
	d.log.Info("coworkbridge starting",
		"version", d.version, "pid", os.Getpid(),
		"state_dir", d.paths.StateDir, "log_dir", d.paths.LogDir,
		"config_candidates", d.env.ConfigCandidates())
	if o := d.env.Overrides(); len(o) > 0 {
		d.log.Warn("development overrides in effect; a deployment should set none of them", "variables", o)
	}
}

// apply puts a new configuration into force and says so. It is the one place a configuration
// change takes effect.
func (d *Daemon) apply(ctx context.Context, prev, s managedconfig.Snapshot) {
	d.logConfig(prev, s)
	mode := s.Config.Mode
	if s.Origin == managedconfig.OriginInvalid {
		mode = s.Intent
	}
	failing := s.Origin == managedconfig.OriginInvalid && s.Intent == managedconfig.Enforce
	d.health.SetConfig(health.ConfigState{Path: s.Path, Origin: s.Origin, Hash: s.ShortHash(),
		Mode: mode, Enabled: s.Enabled() || failing, FailingClosed: failing, Problem: s.ProblemText(),
		Lockdown: s.Config.Lockdown && s.Origin != managedconfig.OriginInvalid})
	d.stamp = telemetry.LocalStamp(d.version, s.ShortHash(), string(s.Origin))
	d.workerPolicy.Store(&hosthook.Serving{Snap: s, Failing: failing, Stamp: d.stamp})
	d.wantDropIn(s)
	switch {
	case s.Enabled():
		if cls := d.compilePolicy(s.Config.Policy); cls != nil {
			d.startOrUpdateGuard(ctx, s.Config, cls)
			if d.guard != nil {
				d.guard.log.SetStamp(d.stamp)
			}
		}
	case failing:
		d.failClosed(ctx, s)
	case s.Origin == managedconfig.OriginInvalid:
		// Off, but hooks an earlier install left stay: removing them would relax enforcement
		// on the strength of a broken file.
		d.stopGuard()
	default:
		d.switchOff()
	}
	d.serving.Store(&serving{snap: s, on: d.guard != nil, failing: failing, stamp: d.stamp})
	d.importDropped()
}

// failClosed guards the sessions in enforce mode with every call denied: the file meant to
// enforce is broken and no good copy exists, so which calls it would allow cannot be known. The
// roots and limits are the defaults.
func (d *Daemon) failClosed(ctx context.Context, s managedconfig.Snapshot) {
	cfg := s.Config // the defaults: the file's own values are unreadable
	cfg.CoworkEnabled, cfg.Mode = true, managedconfig.Enforce
	cls, err := policy.DenyAll()
	if err != nil {
		d.log.Error("cannot build the deny-all policy", "err", err.Error())
		return
	}
	d.startOrUpdateGuard(ctx, cfg, cls)
}

func (d *Daemon) startOrUpdateGuard(ctx context.Context, cfg managedconfig.Config, cls *classifier.Classifier) {
	if d.guard != nil && slices.Equal(d.guard.roots, cfg.SessionsRoots) && d.guard.telemetry.Path == cfg.Telemetry.Path &&
		d.guard.telemetry == cfg.Telemetry {
		if w := d.guard.workers; w != nil {
			w.Configure(d.setupFor(true, false, d.guard.tuning))
			return
		}
		// The collector first: leases and mode are current before any hook changes.
		d.guard.collector.SetConfig(cfg, cls)
		d.guard.injector.SetConfig(cfg)
		return
	}
	if d.guard != nil {
		if !slices.Equal(d.guard.roots, cfg.SessionsRoots) {
			d.switchOff() // the roots moved: sessions under the old ones are no longer ours to guard
		} else {
			d.stopGuard() // the decision log moved: start again on the new one
		}
	}
	g, err := d.newGuard(cfg, cls)
	if err != nil {
		d.log.Error("cannot start guarding sessions", "err", err)
		return
	}
	gctx, cancel := context.WithCancel(ctx)
	g.cancel = cancel
	runs := []func(context.Context) error{g.collector.Run, g.injector.Run}
	if g.workers != nil {
		g.workers.Configure(d.setupFor(true, false, g.tuning))
		runs = []func(context.Context) error{g.workers.Run}
	}
	for _, run := range runs {
		g.running.Go(func() {
			err := run(gctx)
			select {
			case g.done <- err:
			default:
			}
			cancel() // one without the other guards nothing
		})
	}
	d.guard = g
	d.watching.Store(g)
	d.log.Info("guarding Cowork sessions", "mode", string(cfg.Mode), "sessions_roots", cfg.SessionsRoots, "decision_log", cfg.Telemetry.Path)
}

// newGuard builds the collector and the injector for cfg.
func (d *Daemon) newGuard(cfg managedconfig.Config, cls *classifier.Classifier) (*guard, error) {
	var tlog *telemetry.Log
	gid, share := d.logReaders(cfg.Telemetry)
	tlog = telemetry.Open(telemetry.Options{Path: cfg.Telemetry.Path, MaxFileBytes: int64(cfg.Telemetry.MaxFileMB) << 20,
		MaxFiles: cfg.Telemetry.MaxFiles, Redact: cfg.Telemetry.Redact, Inputs: cfg.Telemetry.Inputs, Stamp: d.stamp,
		GroupRead: share, ReadGID: gid, Mode: string(cfg.Mode), RetainMinAge: time.Duration(cfg.Telemetry.RetainedMinDays) * 24 * time.Hour,
		OnBreak: func(problem string) { d.recordTampered(tlog, cfg.Mode, problem) }})
	if _, _, err := tlog.Check(); err != nil { // marks where the chain ends now
		d.log.Warn("cannot read the end of the decision log's chain", "code", health.CodeTelemetryFailed, "err", err)
	}
	if d.env.System {
		sup, err := d.newSupervisor(cfg)
		if err != nil {
			tlog.Close()
			return nil, err
		}
		return &guard{workers: sup, log: tlog, roots: slices.Clone(cfg.SessionsRoots), telemetry: cfg.Telemetry,
			tuning: workerTuning{budget: d.sessionBudget(), forgedAfter: d.forgedAfter(), poll: d.spoolPoll()},
			done:   make(chan error, 1)}, nil
	}
	recorded, err := telemetry.RecentRIDs(cfg.Telemetry.Path, recentLogBytes)
	if err != nil {
		d.log.Warn("cannot read the end of the decision log; events replayed after a crash may be recorded twice", "err", err)
	}
	// One record of removals: each sees the folders it watches, and neither may undo a removal.
	removals := session.NewRemovals(nil)
	// The collector wakes the injector's rest of a session in use; it tracks sessions only once
	// the injector runs, so inj is set before any wake.
	var inj *injector.Injector
	col := collector.New(cfg, cls, collector.Options{
		Logger: d.log.With("component", "collector"), Health: d.health, Sink: tlog, Offsets: d.offsets, Recorded: recorded,
		Poll: d.spoolPoll(), ChannelRoot: d.paths.ChannelRoot(), BudgetRecords: d.sessionBudget(), Removals: removals,
		ForgedAfter: d.forgedAfter(), Host: d.stamp.Host, User: d.stamp.User, Home: d.env.Home,
		DropIn: filepath.Join(d.dropDir, dropin.Name), Woke: func(dir string) { inj.Stir(dir) }, Beat: d.metro,
	})
	inj, err = injector.New(cfg, injector.Options{Logger: d.log.With("component", "injector"), Recorder: sessionEvents{d.health, col},
		ChannelRoot: d.paths.ChannelRoot(), Removals: removals, Beat: d.metro})
	if err != nil {
		tlog.Close()
		return nil, err
	}
	return &guard{injector: inj, collector: col, log: tlog, roots: slices.Clone(cfg.SessionsRoots),
		telemetry: cfg.Telemetry, done: make(chan error, 1)}, nil
}

// envSessionBudget raises the records one session may log per minute, for soak tests and
// benchmarks that append faster than any agent. Never for a deployment.
const envSessionBudget = "COWORKBRIDGE_SESSION_BUDGET"

func (d *Daemon) sessionBudget() int {
	if d.env.Getenv == nil || d.env.Getenv(envSessionBudget) == "" {
		return 0
	}
	v := d.env.Getenv(envSessionBudget)
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		d.log.Error("ignoring "+envSessionBudget+": not a positive whole number", "value", v)
		return 0
	}
	d.log.Warn(envSessionBudget+" is set: sessions may log more than a deployment allows (tests only)", "records_per_minute", n)
	return n
}

// envForgedAfter shortens how long an event may wait for its call to show in a transcript
// before it is a forged event (a minute), for end-to-end tests. Never for a deployment: the CLI
// writes a call's transcript line about half a second after its hook runs, later under load.
const envForgedAfter = "COWORKBRIDGE_FORGED_AFTER"

func (d *Daemon) forgedAfter() time.Duration {
	if d.env.Getenv == nil || d.env.Getenv(envForgedAfter) == "" {
		return 0
	}
	v := d.env.Getenv(envForgedAfter)
	dur, err := time.ParseDuration(v)
	if err != nil || dur <= 0 {
		d.log.Error("ignoring "+envForgedAfter+": not a positive duration", "value", v)
		return 0
	}
	d.log.Warn(envForgedAfter+" is set: events are held against the transcripts for less than a deployment allows (tests only)", "forged_after", dur.String())
	return dur
}

// envSpoolPoll switches the spool watcher off and polls instead, for the round-trip benchmark
// that compares the two designs. Never for a deployment.
const envSpoolPoll = "COWORKBRIDGE_SPOOL_POLL"

func (d *Daemon) spoolPoll() time.Duration {
	if d.env.Getenv == nil {
		return 0
	}
	v := d.env.Getenv(envSpoolPoll)
	if v == "" {
		return 0
	}
	poll, err := time.ParseDuration(v)
	if err != nil || poll <= 0 {
		d.log.Error("ignoring "+envSpoolPoll+": not a positive duration", "value", v)
		return 0
	}
	d.log.Warn(envSpoolPoll+" is set: spools are polled, not watched (benchmark only)", "poll", poll.String())
	return poll
}

// compilePolicy compiles the admin's policy. A broken one keeps the last good classifier (or the
// built-in rules, when there is none yet), is logged with every problem, and raised as
// config_invalid in the heartbeat and status until a policy compiles again.
func (d *Daemon) compilePolicy(p managedconfig.Policy) *classifier.Classifier {
	res, err := d.policy.Apply(p)
	switch {
	case err != nil:
		d.log.Error("cannot run at all", "err", err.Error())
		return nil
	case res.Problem == nil:
		d.health.SetPolicyProblem("", "")
	case res.Fallback == policy.FallbackRest:
		d.log.Error("part of the policy in managed.json is missing: running without it until it is there", "code", health.CodeConfigInvalid, "err", res.Problem.Error())
		d.health.SetPolicyProblem(res.Problem.Error(), res.Fallback)
	default:
		d.log.Error("policy in managed.json cannot be used: running on "+res.Fallback+" until it is fixed", "code", health.CodeConfigInvalid, "err", res.Problem.Error())
		d.health.SetPolicyProblem(res.Problem.Error(), res.Fallback)
	}
	return res.Classifier
}

// stopGuard stops the session machinery and leaves the hooks in place: while the daemon is
// down, enforce hooks deny, which is the point.
func (d *Daemon) stopGuard() {
	if d.guard == nil {
		return
	}
	d.watching.Store(nil)
	d.guard.cancel()
	d.guard.running.Wait()
	d.guard.log.Close()
	d.guard = nil
}

// switchOff is for an admin turning coworkbridge off: our hooks leave every session, or enforce
// hooks would deny every call once nobody answers them.
func (d *Daemon) switchOff() {
	if d.guard == nil {
		return
	}
	if w := d.guard.workers; w != nil {
		// Each worker takes our hooks out of its user's sessions, as the user: root does not.
		w.SwitchOff(context.Background(), d.setupFor(false, true, d.guard.tuning))
		d.stopGuard()
		d.health.SwitchedOff()
		d.log.Info("coworkbridge switched off: the users' workers removed our hooks from their sessions")
		return
	}
	roots := d.guard.roots
	d.stopGuard()
	n := injector.UnhookAll(roots, d.log)
	d.health.SwitchedOff()
	d.log.Info("coworkbridge switched off: hooks removed from sessions", "sessions_changed", n)
}

func (d *Daemon) startHeartbeat(ctx context.Context, started time.Time) {
	interval := d.current.Config.HeartbeatInterval
	hctx, cancel := context.WithCancel(ctx)
	b := &heartbeat{interval: interval, cancel: cancel, done: make(chan error, 1)}
	opts := health.HeartbeatOptions{
		Interval: interval, Beat: d.metro, Path: d.paths.HealthFile(),
		// The host and user, so that a fleet's store can tell whose guard is not healthy.
		Logger: d.log.With("component", "health", "host", d.stamp.Host, "user", d.stamp.User), Kick: d.kick, Watches: d.watches,
		Daemon: health.DaemonInfo{PID: os.Getpid(), Version: d.version, StartedAt: started},
		Check:  d.checkDropIn, Record: d.recordHead,
	}
	go func() { b.done <- d.health.Heartbeat(hctx, opts) }()
	d.beat = b
}

func (d *Daemon) stopHeartbeat() {
	if d.beat == nil {
		return
	}
	d.beat.cancel()
	<-d.beat.done
	d.beat = nil
}

// guardDone yields the injector's fatal error; nil channel (never ready) while off.
func (d *Daemon) guardDone() <-chan error {
	if d.guard == nil {
		return nil
	}
	return d.guard.done
}

func (d *Daemon) logConfig(prev, s managedconfig.Snapshot) {
	d.level.Set(s.Config.LogLevel)
	if s.SaveErr != nil {
		d.log.Warn("could not keep a last-good copy of the config; a later broken file would switch coworkbridge off",
			"err", s.SaveErr, "path", d.paths.LastGoodFile())
	}
	switch s.Origin {
	case managedconfig.OriginNone:
		d.log.Info("no managed config found: coworkbridge is off", "looked_in", d.env.ConfigCandidates())
		return
	case managedconfig.OriginInvalid:
		if s.Intent == managedconfig.Enforce {
			d.log.Error("managed config is invalid, asks for enforce, and no good copy exists: every tool call is DENIED until the file is fixed",
				"code", health.CodeConfigInvalid, "path", s.Path, "err", s.ProblemText())
			return
		}
		d.log.Error("managed config is invalid and no good copy exists: coworkbridge is OFF until the file is fixed",
			"code", health.CodeConfigInvalid, "path", s.Path, "err", s.ProblemText())
		return
	case managedconfig.OriginLastGood:
		d.log.Error("managed config is invalid: running on the last good copy until the file is fixed",
			"code", health.CodeConfigInvalid, "path", s.Path, "err", s.ProblemText())
	}
	if prev.Hash == s.Hash && prev.Origin != managedconfig.OriginNone && prev.Origin != managedconfig.OriginInvalid {
		if prev.Origin == managedconfig.OriginLastGood && s.Origin == managedconfig.OriginFile {
			d.log.Info("managed config is valid again", "path", s.Path, "config_hash", s.ShortHash())
		}
		return // the same configuration is still in force
	}
	d.log.Info("managed config in force", effectiveAttrs(s)...)
	if !s.Config.CoworkEnabled {
		d.log.Info("cowork_enabled is false: coworkbridge is idle")
	}
}

func effectiveAttrs(s managedconfig.Snapshot) []any {
	c := s.Config
	return []any{
		"path", s.Path, "config_origin", s.Origin, "config_hash", s.ShortHash(),
		"cowork_enabled", c.CoworkEnabled, "mode", string(c.Mode),
		"sessions_roots", c.SessionsRoots,
		"hook_timeout", c.HookTimeout.String(), "decision_timeout", c.DecisionTimeout.String(),
		"heartbeat_interval", c.HeartbeatInterval.String(), "rescan_interval", c.RescanInterval.String(),
		"max_line_bytes", c.MaxLineBytes,
		slog.Group("policy",
			"rules_dirs", c.Policy.RulesDirs, "disabled_rules", c.Policy.DisabledRules,
			"rule_modes", len(c.Policy.RuleModes), "allowed_executables", len(c.Policy.AllowedExecutables),
			"restrict_mcp_servers", c.Policy.RestrictMCPServers),
		slog.Group("telemetry",
			"path", c.Telemetry.Path, "max_file_mb", c.Telemetry.MaxFileMB,
			"max_files", c.Telemetry.MaxFiles, "redact", c.Telemetry.Redact),
		"log_level", c.LogLevel.String(),
	}
}
