package privsep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/collector"
	"github.com/coworkbridge/coworkbridge/injector"
	"github.com/coworkbridge/coworkbridge/internal/metronome"
	"github.com/coworkbridge/coworkbridge/internal/realpath"
	"github.com/coworkbridge/coworkbridge/internal/runfile"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
)

// WorkerOptions are what a worker needs besides its link to root.
type WorkerOptions struct {
	// Home is the user's home folder; the worker's state (offsets, flows) is kept under it.
	Home string
	// GOOS is the platform, for where the user's state folder is.
	GOOS string
	// Stderr receives what the worker cannot tell root (its link down); nil: discarded.
	Stderr *slog.Logger
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// workerFrame bounds what a worker reads from root: setups, a session's question, a receipt.
const workerFrame = 16 << 20

// statsEvery is how often a worker looks whether the folders it watches and the sessions it
// follows changed, and tells root if so, for the heartbeat; status asks for them fresh. Each look
// wakes the worker, and each note root: with a hundred idle users, a look every 10 s and a note
// at each cost more than their sessions.
const statsEvery = 30 * time.Second

// Work runs a user's worker over conn, the socket pair root started it with, until root closes
// it or ctx ends. It refuses to run as root: a worker exists so that root does none of this.
func Work(ctx context.Context, conn net.Conn, opts WorkerOptions) error {
	if os.Geteuid() == 0 {
		return errors.New("a worker never runs as root: root starts one per user, as that user")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Stderr == nil {
		opts.Stderr = slog.New(slog.DiscardHandler)
	}
	l := newLink(conn, workerFrame, 4)
	level := new(slog.LevelVar)
	w := &work{link: l, opts: opts, level: level, beat: metronome.Spread(), setups: make(chan pendingSetup, 1),
		linker: sync.OnceValue(func() *classifier.Classifier {
			cls, _ := classifier.New(classifier.Policy{})
			return cls
		})}
	w.rules = &remoteRules{link: l, now: opts.Now, home: opts.Home}
	w.rules.set(Setup{})
	w.health = newHealthQueue(l)
	w.log = slog.New(&logHandler{link: l, level: level, fallback: opts.Stderr.Handler()})
	release, offsets, err := w.state()
	if err != nil {
		l.close(err)
		return err
	}
	defer release()
	w.offsets = offsets
	hctx, stopHealth := context.WithCancel(context.Background())
	healthDone := make(chan struct{})
	go func() { defer close(healthDone); w.health.run(hctx) }()
	done := make(chan error, 1)
	// The link outlives ctx: a worker asked to stop finishes its last pass through it (its
	// records written by root, its offsets kept), and only then closes it.
	go func() { done <- l.run(context.Background(), w.handle) }()
	defer l.close(errClosed)
	defer func() { stopHealth(); <-healthDone }() // after the guard's last notes
	defer w.stop()
	tick := w.beat.Ticker(statsEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			if ctx.Err() != nil || errors.Is(err, errClosed) {
				return nil // root closed the link: it is stopping, or stopping this user
			}
			return err
		case p := <-w.setups:
			w.apply(ctx, p.s)
			close(p.done)
			w.stats() // root's count of watches and sessions, at once rather than at the next tick
		case err := <-w.guardDone():
			w.log.Error("the session guard ended; root will start this worker again", "err", err)
			return fmt.Errorf("session guard: %w", err)
		case <-tick.C:
			w.stats()
		}
	}
}

// work is a running worker; only Work's goroutine touches guard and setup.
type work struct {
	link    *link
	opts    WorkerOptions
	log     *slog.Logger
	level   *slog.LevelVar
	offsets *spool.Store
	setups  chan pendingSetup
	// mu guards guard for the handlers of root's questions, which run in their own goroutines.
	mu    sync.Mutex
	guard *wguard
	roots []string // the roots last guarded, for an unhook after the guard stopped
	// rules are the worker's judgement, root's over the link; kept across guards.
	rules *remoteRules
	// beat is the worker's metronome: its stats look, the collector's rescans and lease checks
	// and the injector's rescans wake it together.
	beat *metronome.Metronome
	// health carries what the guard's parts tell health to root, in batches.
	health *healthQueue
	// linker reads the paths a command names (see where); made on first use.
	linker func() *classifier.Classifier
	// told is what the last stats note told root; Work's goroutine alone touches it.
	told   Stats
	toldOK bool
}

// pendingSetup is a setup on its way to Work's goroutine; done closes once it is in force, or
// once a later one replaced it.
type pendingSetup struct {
	s    Setup
	done chan struct{}
}

// wguard is the injector and the collector over the user's sessions roots.
type wguard struct {
	inj     *injector.Injector
	col     *collector.Collector
	rules   *remoteRules
	roots   []string
	cancel  context.CancelFunc
	done    chan error
	running sync.WaitGroup
}

// state takes the worker's lock and opens its offsets, in the user's own state folder: a
// second worker of the same user (a root restarted while the first lingers) waits its turn
// rather than read the same spools.
func (w *work) state() (release func(), offsets *spool.Store, err error) {
	dir, err := managedconfig.WorkerStateDir(w.opts.GOOS, w.opts.Home)
	if err != nil {
		return nil, nil, fmt.Errorf("the user's folders: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("create the worker's state folder %s: %w", dir, err)
	}
	lk := flock.New(filepath.Join(dir, "worker.lock"), flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := lk.TryLock()
	if err == nil && !ok {
		err = errors.New("another worker of this user holds it")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("lock %s: %w", lk.Path(), err)
	}
	offsets, err = spool.OpenStore(filepath.Join(dir, "offsets.json"))
	if err != nil {
		w.opts.Stderr.Warn("spool offsets unreadable; events still in the spools will be read again (duplicates are skipped by request id)", "err", err)
	}
	return func() { lk.Unlock() }, offsets, nil
}

// handle serves what root sends.
func (w *work) handle(ctx context.Context, kind string, body json.RawMessage) (any, error) {
	switch kind {
	case kindSetup:
		var s Setup
		if err := json.Unmarshal(body, &s); err != nil {
			return nil, fmt.Errorf("a setup root sent cannot be read: %w", err)
		}
		p := pendingSetup{s: s, done: make(chan struct{})}
		select { // only the latest setup matters
		case old := <-w.setups:
			close(old.done)
		default:
		}
		w.setups <- p
		select { // root waits for a switch-off to be carried out
		case <-p.done:
		case <-ctx.Done():
		}
		return nil, nil
	case kindStats: // root asks, for a heartbeat or status
		return w.current(), nil
	case kindView:
		var q viewAsk
		if err := json.Unmarshal(body, &q); err != nil {
			return nil, err
		}
		// A host hook's call: its shell runs on the Mac, or for the host loop's shell tool, in
		// the VM, whose files this worker cannot see as the VM does (they are asked about).
		p := q.Payload
		inVM := judgement.Call{Door: judgement.Socket, Payload: p}.InVM()
		read := runfile.Reader{Home: w.opts.Home, VM: inVM}.Read
		cls := w.linker()
		if inVM || cls == nil {
			a := viewAnswer{Resolution: *resolution(p, w.places(), classifier.ReadRuns(p, read))}
			return w.withSession(a, q.Session), nil
		}
		// A shell on the Mac: the files it runs and the paths it names, from one analysis.
		files, links := cls.RunsAndLinks(p, read)
		a := viewAnswer{Resolution: *resolution(p, w.places(), files)}
		a.Resolution.Where = w.where(links)
		return w.withSession(a, q.Session), nil
	case kindClock: // root's beat found the wall clock ahead of its timers: a Mac that slept
		if col := w.collector(); col != nil {
			col.RenewDue()
		}
		return nil, nil
	case kindReceipt:
		var r receiptNote
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, err
		}
		if col := w.collector(); col != nil {
			if hl, ok := col.HostCall(r.ID); ok && hl.Judged != nil {
				hl.Judged(r.Receipt)
			}
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unknown message %q", kind)
}

// where is where the user's links take the paths a shell command on the Mac names
// (judgement.Resolution.Where, the paths listed by classifier.RunsAndLinks): root judges the
// command, this worker follows the links as the user.
func (w *work) where(paths []string) map[string]string {
	at := realpath.Where(w.opts.Home, filepath.EvalSymlinks, w.places().Get)
	var out map[string]string
	for _, path := range paths {
		if r, ok := at(path); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[path] = r
		}
	}
	return out
}

// withSession adds to a the state of the calling session id ("": none).
func (w *work) withSession(a viewAnswer, id string) viewAnswer {
	if id != "" {
		a.Session = w.session(id)
	}
	return a
}

// places are the protected places by identity as the user sees them, from the latest setup.
func (w *work) places() *realpath.Cache {
	_, places := w.rules.current()
	return places
}

func (w *work) collector() *collector.Collector {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.guard == nil {
		return nil
	}
	return w.guard.col
}

func (w *work) session(id string) SessionState {
	col := w.collector()
	if col == nil {
		return SessionState{}
	}
	hl, ok := col.HostCall(id)
	if !ok {
		return SessionState{}
	}
	return SessionState{Tracked: true, Quarantined: hl.Quarantined, Flow: hl.Flow}
}

// apply follows a setup from root: the one place a worker's configuration takes effect.
func (w *work) apply(ctx context.Context, s Setup) {
	w.level.Set(s.Config.LogLevel)
	w.rules.set(s)
	if !s.On {
		roots := s.Config.SessionsRoots // the roots root last had guarded
		if len(roots) == 0 {
			roots = w.roots
		}
		w.stopGuard()
		if s.Unhook && len(roots) > 0 {
			n := injector.UnhookAll(roots, w.log)
			w.log.Info("coworkbridge switched off: hooks removed from this user's sessions", "sessions_changed", n)
		}
		return
	}
	if g := w.guard; g != nil && slices.Equal(g.roots, s.Config.SessionsRoots) {
		g.col.SetConfig(s.Config, nil) // the collector first: leases and mode current before any hook changes
		g.inj.SetConfig(s.Config)
		return
	}
	w.stopGuard()
	if err := w.startGuard(ctx, s); err != nil {
		w.log.Error("cannot start guarding this user's sessions", "err", err)
	}
}

func (w *work) startGuard(ctx context.Context, s Setup) error {
	h := remoteHealth{w.health}
	rules := w.rules
	removals := session.NewRemovals(nil)
	recorded := make(map[string]bool, len(s.Recorded))
	for _, rid := range s.Recorded {
		recorded[rid] = true
	}
	// The collector wakes the injector's rest of a session in use; it tracks sessions only once
	// the injector runs, so inj is set before any wake.
	var inj *injector.Injector
	col := collector.New(s.Config, nil, collector.Options{
		Logger: w.log.With("component", "collector"), Health: h, Sink: remoteSink{link: w.link, max: recordsChunk(s.Config)},
		Offsets: w.offsets, Rules: rules, Recorded: recorded, Poll: s.SpoolPoll, ChannelRoot: w.channelRoot(),
		BudgetRecords: s.BudgetRecords, Removals: removals, ForgedAfter: s.ForgedAfter, Host: s.Host, User: s.User, Home: w.opts.Home,
		DropIn: s.DropIn, Woke: func(dir string) { inj.Stir(dir) }, Beat: w.beat, ClockTold: true,
	})
	var err error
	inj, err = injector.New(s.Config, injector.Options{Logger: w.log.With("component", "injector"),
		Recorder: sessionEvents{remoteHealth: h, col: col}, ChannelRoot: w.channelRoot(), Removals: removals, Owned: w.owned, Beat: w.beat})
	if err != nil {
		return err
	}
	g := &wguard{inj: inj, col: col, rules: rules, roots: slices.Clone(s.Config.SessionsRoots), done: make(chan error, 1)}
	gctx, cancel := context.WithCancel(ctx)
	g.cancel = cancel
	for _, run := range []func(context.Context) error{col.Run, inj.Run} {
		g.running.Go(func() {
			err := run(gctx)
			select {
			case g.done <- err:
			default:
			}
			cancel() // one without the other guards nothing
		})
	}
	w.mu.Lock()
	w.guard, w.roots = g, g.roots
	w.mu.Unlock()
	w.log.Info("guarding this user's Cowork sessions", "mode", string(s.Config.Mode), "sessions_roots", s.Config.SessionsRoots)
	return nil
}

func (w *work) stopGuard() {
	w.mu.Lock()
	g := w.guard
	w.guard = nil
	w.mu.Unlock()
	if g == nil {
		return
	}
	g.cancel()
	g.running.Wait()
}

func (w *work) guardDone() <-chan error {
	if w.guard == nil {
		return nil
	}
	return w.guard.done
}

// channelRoot is the worker's host channels' folder: in system mode host hooks hand their
// calls to root over the socket, but a session's own hook running on the Mac finds its channel
// here.
func (w *work) channelRoot() string { return managedconfig.WorkerChannelRoot(w.opts.GOOS, w.opts.Home) }

// owned returns the injector's check, for one pass, that a session folder under the user's
// home is the user's own, every folder from the home down to it real and theirs: a link above
// the sessions root to another user's folders would otherwise report the other user's sessions
// as this user's. The folders the pass's sessions share are looked at once.
func (w *work) owned() func(dir string) error {
	o := session.NewOwnership(w.opts.Home, os.Geteuid())
	return func(dir string) error {
		rel, err := filepath.Rel(w.opts.Home, dir)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			return nil // a root the admin named outside the home: theirs to lay out
		}
		return o.Below(dir)
	}
}

// stats tells root what the worker watches and follows now, unless the last note told it so.
func (w *work) stats() {
	st := w.current()
	if w.toldOK && st == w.told {
		return
	}
	if w.link.note(kindStats, st) == nil {
		w.told, w.toldOK = st, true
	}
}

// current is what the worker watches and follows now.
func (w *work) current() Stats {
	w.mu.Lock()
	g := w.guard
	w.mu.Unlock()
	st := Stats{}
	if g != nil {
		st.Watches, st.Sessions = g.inj.Watches()+g.col.Watches(), g.col.Sessions()
	}
	return st
}

// stop ends the guard, its last pass through the link still open.
func (w *work) stop() { w.stopGuard() }
