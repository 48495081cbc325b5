package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/collector"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/injector"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// Files in the state folder.
const offsetsFile = "offsets.json"

// recentLogBytes is how much of the decision log's end is read at start to skip replayed events.
const recentLogBytes = 8 << 20

func cmdRun(ctx context.Context, args []string, sio stdio) int {
	fs := newFlags("run", "", "Runs the daemon until SIGTERM or SIGINT (what the LaunchAgent starts). It reads managed.json\n"+
		"from $"+managedconfig.EnvManagedConfig+" (development), else the system location, and idles while\n"+
		"cowork_enabled is false.", sio)
	if code, done := fs.parse(args); done {
		return code
	}
	if code, done := fs.noArgs(); done {
		return code
	}
	level := new(slog.LevelVar)
	log := newLogger(sio.err, level)
	d, release, err := newDaemon(log, level)
	if err != nil {
		log.Error("coworkbridge cannot start", "err", err)
		return exitFail
	}
	defer release()

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := d.Run(ctx); err != nil {
		log.Error("coworkbridge stopped on an error", "err", err)
		return exitFail
	}
	return exitOK
}

// daemon is the long-running process of one user.
type daemon struct {
	log    *slog.Logger
	level  *slog.LevelVar
	env    managedconfig.Env
	paths  managedconfig.Paths
	loader *managedconfig.Loader
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
	// watching is the running guard's parts, for the heartbeat's count of watches (it runs in its
	// own goroutine, so it cannot look at guard).
	watching atomic.Pointer[guard]
	// stamp is what decision-log records say of where they come from; only Run's goroutine
	// touches it.
	stamp telemetry.Stamp
}

// watches counts every folder the daemon watches now: the guard's and the config watcher's.
func (d *daemon) watches() int {
	n := d.loader.Watches()
	if g := d.watching.Load(); g != nil {
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
// hooks in place, the collector answers them.
type guard struct {
	injector  *injector.Injector
	collector *collector.Collector
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

func (e sessionEvents) SessionGone(id string) {
	e.Health.SessionGone(id)
	e.c.Untrack(id)
}

var (
	_ injector.Recorder = sessionEvents{}
	_ collector.Health  = (*health.Health)(nil)
)

// newDaemon resolves the daemon's folders and takes the per-user lock.
func newDaemon(log *slog.Logger, level *slog.LevelVar) (*daemon, func(), error) {
	env, err := managedconfig.SystemEnv()
	if err != nil {
		return nil, nil, err
	}
	return newDaemonIn(env, log, level)
}

// newDaemonIn is newDaemon for a given environment: the demo runs a daemon on its own folders.
func newDaemonIn(env managedconfig.Env, log *slog.Logger, level *slog.LevelVar) (*daemon, func(), error) {
	paths, err := env.Paths()
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(paths.StateDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("create state folder: %w", err)
	}
	release, err := acquireLock(paths.LockFile())
	if err != nil {
		return nil, nil, err
	}
	offsets, err := spool.OpenStore(filepath.Join(paths.StateDir, offsetsFile))
	if err != nil {
		log.Error("spool offsets unreadable; events still in the spools will be read again (duplicates are skipped by request id)", "err", err)
	}
	d := &daemon{log: log, level: level, env: env, paths: paths, loader: managedconfig.NewDaemonLoader(env, paths),
		health: health.New(time.Now), offsets: offsets, kick: make(chan struct{}, 1)}
	return d, release, nil
}

// Run loads the configuration, follows its changes, and returns nil once ctx is cancelled.
func (d *daemon) Run(ctx context.Context) error {
	started := time.Now()
	d.current = d.loader.Load()
	d.logStart()
	d.apply(ctx, managedconfig.Snapshot{}, d.current)
	defer d.stopGuard()
	d.startHeartbeat(ctx, started)
	defer d.stopHeartbeat()
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)

	changes := make(chan managedconfig.Snapshot)
	watchDone := make(chan error, 1)
	opts := managedconfig.WatchOptions{Poll: d.current.Config.RescanInterval, Logger: d.log}
	go func() {
		watchDone <- d.loader.Watch(ctx, d.current, opts, func(s managedconfig.Snapshot) {
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
			d.log.Info("coworkbridge stopped", "uptime", time.Since(started).Round(time.Millisecond).String())
			return err
		case s := <-changes:
			prev := d.current
			d.current = s
			d.apply(ctx, prev, s)
			if d.beat.interval != s.Config.HeartbeatInterval {
				d.stopHeartbeat()
				d.startHeartbeat(ctx, started)
			}
		case <-usr1:
			select {
			case d.kick <- struct{}{}:
			default: // one is already pending
			}
		case err := <-watchDone:
			if ctx.Err() != nil { // the watcher saw the signal first
				d.log.Info("coworkbridge stopped", "uptime", time.Since(started).Round(time.Millisecond).String())
				return err
			}
			if err == nil {
				err = errors.New("config watcher ended unexpectedly")
			}
			return err
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

func (d *daemon) logStart() {
	d.log.Info("coworkbridge starting",
		"version", versionString(), "pid", os.Getpid(),
		"state_dir", d.paths.StateDir, "log_dir", d.paths.LogDir,
		"config_candidates", d.env.ConfigCandidates())
	if o := d.env.Overrides(); len(o) > 0 {
		d.log.Warn("development overrides in effect; a deployment should set none of them", "variables", o)
	}
}

// apply puts a new configuration into force and says so. It is the one place a configuration
// change takes effect.
func (d *daemon) apply(ctx context.Context, prev, s managedconfig.Snapshot) {
	d.logConfig(prev, s)
	mode := s.Config.Mode
	if s.Origin == managedconfig.OriginInvalid {
		mode = s.Intent
	}
	d.health.SetConfig(health.ConfigState{Path: s.Path, Origin: string(s.Origin), Hash: s.ShortHash(),
		Mode: string(mode), Enabled: s.Enabled(), Problem: errString(s.Problem)})
	d.stamp = recordStamp(s)
	switch {
	case s.Enabled():
		if cls := d.compilePolicy(s.Config.Policy); cls != nil {
			d.startOrUpdateGuard(ctx, s.Config, cls)
			if d.guard != nil {
				d.guard.log.SetStamp(d.stamp)
			}
		}
	case s.Origin == managedconfig.OriginInvalid && s.Intent == managedconfig.Enforce:
		d.failClosed(ctx, s)
	case s.Origin == managedconfig.OriginInvalid:
		// Off, but hooks an earlier install left stay: removing them would relax enforcement
		// on the strength of a broken file.
		d.stopGuard()
	default:
		d.switchOff()
	}
}

// failClosed guards the sessions in enforce mode with every call denied: the file meant to
// enforce is broken and no good copy exists, so which calls it would allow cannot be known. The
// roots and limits are the defaults.
func (d *daemon) failClosed(ctx context.Context, s managedconfig.Snapshot) {
	cfg := s.Config // the defaults: the file's own values are unreadable
	cfg.CoworkEnabled, cfg.Mode = true, managedconfig.Enforce
	cls, err := classifier.New(classifier.Policy{DenyAll: "this tool call was blocked because the organisation's coworkbridge " +
		"configuration (managed.json) is invalid and asks for enforce mode, so no call can be checked. Ask your IT team to fix it."})
	if err != nil {
		d.log.Error("cannot build the deny-all policy", "err", err.Error())
		return
	}
	d.startOrUpdateGuard(ctx, cfg, cls)
}

func (d *daemon) startOrUpdateGuard(ctx context.Context, cfg managedconfig.Config, cls *classifier.Classifier) {
	if d.guard != nil && slices.Equal(d.guard.roots, cfg.SessionsRoots) && d.guard.telemetry.Path == cfg.Telemetry.Path &&
		d.guard.telemetry == cfg.Telemetry {
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
	for _, run := range []func(context.Context) error{g.collector.Run, g.injector.Run} {
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
func (d *daemon) newGuard(cfg managedconfig.Config, cls *classifier.Classifier) (*guard, error) {
	tlog := telemetry.Open(telemetry.Options{Path: cfg.Telemetry.Path, MaxFileBytes: int64(cfg.Telemetry.MaxFileMB) << 20,
		MaxFiles: cfg.Telemetry.MaxFiles, Redact: cfg.Telemetry.Redact, Inputs: cfg.Telemetry.Inputs, Stamp: d.stamp})
	recorded, err := telemetry.RecentRIDs(cfg.Telemetry.Path, recentLogBytes)
	if err != nil {
		d.log.Warn("cannot read the end of the decision log; events replayed after a crash may be recorded twice", "err", err)
	}
	// One record of removals: each sees the folders it watches, and neither may undo a removal.
	removals := session.NewRemovals(nil)
	col := collector.New(cfg, cls, collector.Options{
		Logger: d.log.With("component", "collector"), Health: d.health, Sink: tlog, Offsets: d.offsets, Recorded: recorded,
		Poll: d.spoolPoll(), ChannelRoot: d.channelRoot(), BudgetRecords: d.sessionBudget(), Removals: removals,
	})
	inj, err := injector.New(cfg, injector.Options{Logger: d.log.With("component", "injector"), Recorder: sessionEvents{d.health, col},
		ChannelRoot: d.channelRoot(), Removals: removals})
	if err != nil {
		tlog.Close()
		return nil, err
	}
	return &guard{injector: inj, collector: col, log: tlog, roots: slices.Clone(cfg.SessionsRoots),
		telemetry: cfg.Telemetry, done: make(chan error, 1)}, nil
}

// channelFolder, in the state folder, holds the sessions' host channels.
const channelFolder = "channel"

func (d *daemon) channelRoot() string { return filepath.Join(d.paths.StateDir, channelFolder) }

// envSessionBudget raises the records one session may log per minute, for soak tests and
// benchmarks that append faster than any agent. Never for a deployment.
const envSessionBudget = "COWORKBRIDGE_SESSION_BUDGET"

func (d *daemon) sessionBudget() int {
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

// envSpoolPoll switches the spool watcher off and polls instead, for the round-trip benchmark
// that compares the two designs. Never for a deployment.
const envSpoolPoll = "COWORKBRIDGE_SPOOL_POLL"

func (d *daemon) spoolPoll() time.Duration {
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
func (d *daemon) compilePolicy(p managedconfig.Policy) *classifier.Classifier {
	res, err := d.policy.Apply(p)
	switch {
	case err != nil:
		d.log.Error("cannot run at all", "err", err.Error())
		return nil
	case res.Problem == nil:
		d.health.SetPolicyProblem("", "")
	case res.Fallback == policy.FallbackRest:
		d.log.Error("part of the policy in managed.json is missing: running without it until it is there", "code", "config_invalid", "err", res.Problem.Error())
		d.health.SetPolicyProblem(res.Problem.Error(), res.Fallback)
	default:
		d.log.Error("policy in managed.json cannot be used: running on "+res.Fallback+" until it is fixed", "code", "config_invalid", "err", res.Problem.Error())
		d.health.SetPolicyProblem(res.Problem.Error(), res.Fallback)
	}
	return res.Classifier
}

// stopGuard stops the session machinery and leaves the hooks in place: while the daemon is
// down, enforce hooks deny, which is the point.
func (d *daemon) stopGuard() {
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
func (d *daemon) switchOff() {
	if d.guard == nil {
		return
	}
	roots := d.guard.roots
	d.stopGuard()
	n := injector.UnhookAll(roots, d.log)
	d.log.Info("coworkbridge switched off: hooks removed from sessions", "sessions_changed", n)
}

func (d *daemon) startHeartbeat(ctx context.Context, started time.Time) {
	interval := d.current.Config.HeartbeatInterval
	hctx, cancel := context.WithCancel(ctx)
	b := &heartbeat{interval: interval, cancel: cancel, done: make(chan error, 1)}
	opts := health.HeartbeatOptions{
		Interval: interval, Path: filepath.Join(d.paths.StateDir, healthFile),
		Logger: d.log.With("component", "health"), Kick: d.kick, Watches: d.watches,
		Daemon: health.DaemonInfo{PID: os.Getpid(), Version: versionString(), StartedAt: started},
	}
	go func() { b.done <- d.health.Heartbeat(hctx, opts) }()
	d.beat = b
}

func (d *daemon) stopHeartbeat() {
	if d.beat == nil {
		return
	}
	d.beat.cancel()
	<-d.beat.done
	d.beat = nil
}

// guardDone yields the injector's fatal error; nil channel (never ready) while off.
func (d *daemon) guardDone() <-chan error {
	if d.guard == nil {
		return nil
	}
	return d.guard.done
}

func (d *daemon) logConfig(prev, s managedconfig.Snapshot) {
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
				"code", "config_invalid", "path", s.Path, "err", errString(s.Problem))
			return
		}
		d.log.Error("managed config is invalid and no good copy exists: coworkbridge is OFF until the file is fixed",
			"code", "config_invalid", "path", s.Path, "err", errString(s.Problem))
		return
	case managedconfig.OriginLastGood:
		d.log.Error("managed config is invalid: running on the last good copy until the file is fixed",
			"code", "config_invalid", "path", s.Path, "err", errString(s.Problem))
	}
	if prev.Hash == s.Hash && prev.Origin != managedconfig.OriginNone && prev.Origin != managedconfig.OriginInvalid {
		if prev.Origin == managedconfig.OriginLastGood && s.Origin == managedconfig.OriginFile {
			d.log.Info("managed config is valid again", "path", s.Path, "hash", s.ShortHash())
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
		"path", s.Path, "origin", string(s.Origin), "hash", s.ShortHash(),
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

// recordStamp is what the decision log's records say about where they come from under the
// configuration s: this Mac, its user, this build, and the configuration's hash and origin.
func recordStamp(s managedconfig.Snapshot) telemetry.Stamp {
	host, _ := os.Hostname()
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return telemetry.Stamp{Host: host, User: name, Version: versionString(), ConfigHash: s.ShortHash(), ConfigOrigin: string(s.Origin)}
}
