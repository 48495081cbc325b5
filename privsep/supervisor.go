package privsep

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/collector"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/internal/metronome"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// User is a person of the Mac a worker serves, as root's user database names them.
type User struct {
	UID, GID uint32
	Groups   []uint32
	Name     string
	Home     string
}

// Root is what root does for the workers: judge, record and count. Each method is told the user
// root started the worker as; nothing a worker says can change who that is.
type Root interface {
	Decide(ctx context.Context, u User, c judgement.Call) judgement.Outcome
	Refuse(u User, c judgement.Call, rule, reason string) judgement.Outcome
	InstructionFindings(u User, text string) []classifier.Verdict
	// Record writes a worker's records in the decision log, each stamped with u; sync makes the
	// log durable. It returns once they are written.
	Record(u User, recs []telemetry.Record, sync bool) error
	Health(u User, n HealthNote)
	// Forget: what u's workers reported so far (their sessions, their rescans) stops counting.
	// Root is told when a worker of u's starts, before its first note, so that a worker started
	// again (after it ended, or for a home that changed) reports afresh and nothing an earlier
	// one saw lingers as guarded; and once a user no longer on the Mac has their worker stopped.
	Forget(u User)
	// Log is a line of the worker's own log.
	Log(u User, level slog.Level, msg string, attrs map[string]any)
}

// Supervisor is root's side of privilege separation: one worker per user, started as that user
// and started again with backoff when it ends, stopped when the user goes.
type Supervisor struct {
	// Exe is the coworkbridge program a worker runs (`run --worker`).
	Exe  string
	Root Root
	// Users lists the users to serve now; asked at start and every Rescan.
	Users  func() ([]User, error)
	Rescan time.Duration
	// WorkerEnv is added to the environment each worker starts with (which holds nothing of
	// root's): a development build's profiles only.
	WorkerEnv []string
	// Beat is root's metronome, which the rescan and the clock check tick on; nil: a beat of its
	// own.
	Beat *metronome.Metronome
	// Now is the wall clock the clock check reads; nil: time.Now.
	Now    func() time.Time
	Log    *slog.Logger
	Health *health.Health
	// MaxFrame bounds a message root reads from a worker (see FrameFor).
	MaxFrame int
	// Recorded is the request ids of u's already in the decision log, for a worker starting.
	Recorded func(u User) []string

	mu      sync.Mutex
	workers map[uint32]*worker
	// last is the latest worker started for each uid, kept until it has ended even once its
	// user is gone: the next worker of that uid waits for it (see follow).
	last  map[uint32]*worker
	setup func(User) Setup
}

// Backoffs of a worker started again: doubling from the first to the last; a worker that ran
// for steadyFor starts again from the first.
const (
	firstBackoff = time.Second
	lastBackoff  = time.Minute
	steadyFor    = 5 * time.Minute
)

// FrameFor is the largest message root reads from a worker under maxLine: a call at the largest
// line twice over (as written and as its links resolve), with room for the rest. A worker can
// make root hold this much for it at once, never more.
func FrameFor(maxLine int64) int {
	return int(2*min(max(maxLine, 1<<20), 256<<20)) + 4<<20
}

// Configure sets what each worker is told to do, tells the running ones now and each one
// started later.
func (s *Supervisor) Configure(setup func(User) Setup) {
	s.mu.Lock()
	s.setup = setup
	ws := s.listLocked()
	s.mu.Unlock()
	for _, w := range ws {
		w.send(setup(w.user))
	}
}

func (s *Supervisor) listLocked() []*worker {
	ws := make([]*worker, 0, len(s.workers))
	for _, w := range s.workers {
		ws = append(ws, w)
	}
	return ws
}

// Run serves the users until ctx ends, then stops every worker.
func (s *Supervisor) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.workers == nil {
		s.workers = map[uint32]*worker{}
	}
	s.mu.Unlock()
	var running sync.WaitGroup
	defer running.Wait()
	scan := s.Beat.Ticker(max(s.Rescan, time.Second))
	defer scan.Stop()
	every := collector.LeaseCheckEvery(s.Rescan)
	clock := s.Beat.Ticker(every)
	defer clock.Stop()
	last := s.now()
	s.follow(ctx, &running)
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			for _, w := range s.workers {
				w.cancel()
			}
			s.mu.Unlock()
			return nil
		case <-scan.C:
			s.follow(ctx, &running)
		case <-clock.C:
			now := s.now()
			if ranAhead(last, now, every) {
				s.tellClockRanAhead()
			}
			last = now
		}
	}
}

// ranAhead reports whether the wall clock went further from last to now than a timer of period
// took: the Mac slept (timers stop meanwhile, the clock does not) or its clock was set forward.
// Either can bring the users' leases to their end before their workers' next rescan.
func ranAhead(last, now time.Time, period time.Duration) bool {
	return now.Round(0).Sub(last.Round(0)) > period+period/2
}

// tellClockRanAhead tells every worker to renew the leases the clock brought due. A worker
// checks its leases itself only at its rescans: its own check between them was an idle worker's
// one wake-up more, and root's beat wakes root anyway.
func (s *Supervisor) tellClockRanAhead() {
	s.mu.Lock()
	ws := s.listLocked()
	s.mu.Unlock()
	for _, w := range ws {
		if l := w.current(); l != nil {
			_ = l.note(kindClock, nil)
		}
	}
}

func (s *Supervisor) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// follow starts a worker for each user new since the last scan and stops those of users gone.
func (s *Supervisor) follow(ctx context.Context, running *sync.WaitGroup) {
	users, err := s.Users()
	if err != nil {
		s.Log.Warn("cannot list the Mac's users; the workers running stay as they are", "err", err)
		return
	}
	seen := map[uint32]bool{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range users {
		seen[u.UID] = true
		if w := s.workers[u.UID]; w != nil && w.user.Home == u.Home && w.user.Name == u.Name {
			continue
		} else if w != nil {
			s.Log.Info("a user's name or home changed: their worker starts again", "user", u.Name, "uid", u.UID, "was", w.user.Name)
			w.gone.Store(true) // what it reported was of a user who is no more
			w.cancel()
		}
		s.startLocked(ctx, u, running)
	}
	for uid, w := range s.workers {
		if !seen[uid] {
			s.Log.Info("a user is gone: their worker stops", "user", w.user.Name, "uid", uid)
			w.gone.Store(true)
			w.cancel()
			delete(s.workers, uid)
		}
	}
}

// startLocked starts a worker for u once the last one of u's uid has ended, whether its user
// left or changed: until then the old one may still report, and its user's Forget, which comes
// as it ends, would otherwise erase what the new one had reported of the same uid's sessions.
func (s *Supervisor) startLocked(ctx context.Context, u User, running *sync.WaitGroup) {
	if s.last == nil {
		s.last = map[uint32]*worker{}
	}
	prev := s.last[u.UID]
	wctx, cancel := context.WithCancel(ctx)
	w := &worker{s: s, user: u, cancel: cancel, ended: make(chan struct{})}
	s.workers[u.UID], s.last[u.UID] = w, w
	running.Go(func() {
		defer func() {
			s.mu.Lock()
			if s.last[u.UID] == w {
				delete(s.last, u.UID)
			}
			s.mu.Unlock()
			close(w.ended)
		}()
		if prev != nil {
			<-prev.ended // cancelled already: it ends within its stop wait
		}
		if wctx.Err() != nil {
			return
		}
		w.run(wctx)
		if w.gone.Load() {
			s.Root.Forget(w.user) // once it has stopped: no note of its can come after
		}
	})
}

// View asks uid's worker, in one round trip, where the Mac's links take p's paths as the user (so
// that root follows no link of a user's) and, for a call of session id ("": none), that
// session's state.
func (s *Supervisor) View(ctx context.Context, uid uint32, p claudehook.Payload, session string) (*judgement.Resolution, SessionState, error) {
	w := s.worker(uid)
	if w == nil {
		return nil, SessionState{}, fmt.Errorf("no worker serves uid %d", uid)
	}
	l := w.current()
	if l == nil {
		return nil, SessionState{}, fmt.Errorf("the worker of %s is not running", w.user.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var a viewAnswer
	if err := l.call(ctx, kindView, viewAsk{Payload: p, Session: session}, &a); err != nil {
		return nil, SessionState{}, err
	}
	return &a.Resolution, a.Session, nil
}

// Receipt hands uid's worker the receipt of a call of its session id judged at the socket.
func (s *Supervisor) Receipt(uid uint32, id string, r claudehook.Receipt) {
	if w := s.worker(uid); w != nil {
		if l := w.current(); l != nil {
			_ = l.note(kindReceipt, receiptNote{ID: id, Receipt: r})
		}
	}
}

// offWait bounds how long a switch-off waits for each worker to take our hooks out.
const offWait = 30 * time.Second

// SwitchOff tells every running worker to follow setup (an admin switched coworkbridge off: our
// hooks come out of the user's sessions) and waits until each has, or offWait has passed.
func (s *Supervisor) SwitchOff(ctx context.Context, setup func(User) Setup) {
	s.mu.Lock()
	s.setup = setup
	ws := s.listLocked()
	s.mu.Unlock()
	var all sync.WaitGroup
	for _, w := range ws {
		l := w.current()
		if l == nil {
			continue
		}
		all.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, offWait)
			defer cancel()
			if err := l.call(ctx, kindSetup, setup(w.user), nil); err != nil {
				s.Log.Warn("a user's worker did not confirm taking our hooks out; they come out at its next start", "user", w.user.Name, "err", err)
			}
		})
	}
	all.Wait()
}

func (s *Supervisor) worker(uid uint32) *worker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.workers[uid]
}

// Stats sums what the workers watch and follow, each asked now.
func (s *Supervisor) Stats() Stats {
	s.mu.Lock()
	ws := s.listLocked()
	s.mu.Unlock()
	var all sync.WaitGroup
	for _, w := range ws {
		all.Go(w.refresh)
	}
	all.Wait()
	return sumStats(ws)
}

// Told sums what the workers watch and follow as each last told root (a worker tells its figures
// within a rescan of a change), asking none: for the heartbeat, which asking woke every worker.
func (s *Supervisor) Told() Stats {
	s.mu.Lock()
	ws := s.listLocked()
	s.mu.Unlock()
	return sumStats(ws)
}

func sumStats(ws []*worker) Stats {
	var st Stats
	for _, w := range ws {
		w.mu.Lock()
		st.Watches += w.stats.Watches
		st.Sessions += w.stats.Sessions
		w.mu.Unlock()
	}
	return st
}

// statsWait bounds how long a heartbeat waits for a worker to say what it watches; one that does
// not answer in time is counted as it last said.
const statsWait = 500 * time.Millisecond

// refresh asks the worker what it watches and follows now.
func (w *worker) refresh() {
	l := w.current()
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), statsWait)
	defer cancel()
	var st Stats
	if err := l.call(ctx, kindStats, struct{}{}, &st); err == nil {
		w.mu.Lock()
		w.stats = st
		w.mu.Unlock()
	}
}

// Workers describes each worker, for status and the log.
func (s *Supervisor) Workers() []health.Worker {
	s.Stats() // each one's figures as of now
	s.mu.Lock()
	ws := s.listLocked()
	s.mu.Unlock()
	out := make([]health.Worker, 0, len(ws))
	for _, w := range ws {
		w.mu.Lock()
		out = append(out, health.Worker{User: w.user.Name, UID: w.user.UID, PID: w.pid, Running: w.l != nil,
			Starts: w.starts, LastError: w.lastErr, Watches: w.stats.Watches, Sessions: w.stats.Sessions})
		w.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b health.Worker) int { return int(a.UID) - int(b.UID) })
	return out
}

// worker is root's side of one user's worker.
type worker struct {
	s      *Supervisor
	user   User
	cancel context.CancelFunc
	// gone: the user left the Mac, or is now someone else; the worker is stopped for good.
	gone atomic.Bool
	// ended closes when the worker has stopped for good and root has forgotten its reports.
	ended chan struct{}

	logs logBudget

	mu      sync.Mutex
	l       *link
	pid     int
	starts  int
	lastErr string
	stats   Stats
}

func (w *worker) current() *link {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.l
}

func (w *worker) send(s Setup) {
	if l := w.current(); l != nil {
		_ = l.note(kindSetup, s)
	}
}

// run starts the worker, and again each time it ends, until ctx ends.
func (w *worker) run(ctx context.Context) {
	backoff := firstBackoff
	for {
		started := time.Now()
		err := w.once(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > steadyFor {
			backoff = firstBackoff
		}
		w.mu.Lock()
		w.lastErr = err.Error()
		w.mu.Unlock()
		w.s.Log.Error("a user's worker ended; it starts again after a pause", "code", health.CodeWorkerRestarted,
			"user", w.user.Name, "uid", w.user.UID, "err", err, "pause", backoff.String())
		w.s.Health.Count("", health.CodeWorkerRestarted)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, lastBackoff)
	}
}

// once starts the worker as its user and serves it until it ends or ctx does.
func (w *worker) once(ctx context.Context) error {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return fmt.Errorf("make the socket pair: %w", err)
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	mine, theirs := os.NewFile(uintptr(fds[0]), "worker-link"), os.NewFile(uintptr(fds[1]), "root-link")
	conn, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		theirs.Close()
		return fmt.Errorf("use the socket pair: %w", err)
	}
	cmd := w.command(theirs)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		theirs.Close()
		conn.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		theirs.Close()
		conn.Close()
		return fmt.Errorf("start the worker of %s: %w", w.user.Name, err)
	}
	theirs.Close()
	said := make(chan struct{})
	go func() { defer close(said); w.relay(stderr) }()
	l := newLink(conn, max(w.s.MaxFrame, 1<<20), 8)
	w.mu.Lock()
	w.l, w.pid = l, cmd.Process.Pid
	w.starts++
	setup := w.s.setup
	w.mu.Unlock()
	w.s.Log.Info("a user's worker started", "user", w.user.Name, "uid", w.user.UID, "pid", cmd.Process.Pid)
	w.s.Root.Forget(w.user) // before its first note is read: it reports afresh what it finds
	if setup != nil {
		st := setup(w.user)
		if w.s.Recorded != nil {
			st.Recorded = w.s.Recorded(w.user)
		}
		w.send(st)
	}
	err = w.serve(ctx, l, cmd)
	w.mu.Lock()
	w.l = nil
	w.mu.Unlock()
	l.close(errClosed) // the worker reads the end of its link and stops
	waited := make(chan error, 1)
	go func() { <-said; waited <- cmd.Wait() }()
	select {
	case werr := <-waited:
		if werr != nil && (errors.Is(err, errClosed) || err == nil) {
			err = fmt.Errorf("it exited: %w", werr)
		}
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-waited
		err = fmt.Errorf("it did not stop when its link closed, and was killed (%v)", err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, errClosed) {
		err = errors.New("it closed its link")
	}
	return err
}

// stopWait bounds how long a stopping daemon waits for a worker to finish its last pass (its
// records written, its offsets kept) before it closes the link.
const stopWait = 5 * time.Second

// serve serves the worker's link until it ends; when ctx ends first (the daemon stopping), the
// worker is asked to stop (SIGTERM) and served while it finishes its last pass, so that what it
// read is recorded and not read again.
func (w *worker) serve(ctx context.Context, l *link, cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- l.run(context.Background(), w.handle) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(stopWait):
		return fmt.Errorf("it did not stop within %v of being asked", stopWait)
	}
}

// command is the worker's process: this program as the user (their uid, group and groups), the
// environment cleared but for what names the user, in the root folder.
func (w *worker) command(link *os.File) *exec.Cmd {
	u := w.user
	cmd := exec.Command(w.s.Exe, "run", "--worker")
	cmd.Env = append([]string{"HOME=" + u.Home, "USER=" + u.Name, "LOGNAME=" + u.Name, "PATH=/usr/bin:/bin:/usr/sbin:/sbin"}, w.s.WorkerEnv...)
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{link} // fd 3
	cmd.SysProcAttr = procAttr(&syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups})
	return cmd
}

// relayLimit bounds what root keeps of a worker's stderr: a line, and lines per start (a crash
// dump is the usual content; a flood of it would otherwise be root's log's).
const (
	relayLine  = 4 << 10
	relayLines = 200
)

// relay copies what the worker writes to stderr (a crash, or its log while the link is down)
// into root's log.
func (w *worker) relay(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, relayLine), relayLine)
	n := 0
	for sc.Scan() {
		if n++; n <= relayLines {
			w.s.Log.Warn("a user's worker wrote to stderr", "user", w.user.Name, "line", sc.Text())
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// handle serves one message of the worker's.
func (w *worker) handle(ctx context.Context, kind string, body json.RawMessage) (any, error) {
	u := w.user
	switch kind {
	case kindDecide:
		var d decision
		if err := json.Unmarshal(body, &d); err != nil {
			return nil, fmt.Errorf("a call that cannot be read: %w", err)
		}
		if d.FlowErr != "" {
			d.Call.FlowErr = errors.New(d.FlowErr)
		}
		return w.s.Root.Decide(ctx, u, d.Call), nil
	case kindRefuse:
		var r refusal
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, fmt.Errorf("a refusal that cannot be read: %w", err)
		}
		return w.s.Root.Refuse(u, r.Call, r.Rule, r.Reason), nil
	case kindFindings:
		var text string
		if err := json.Unmarshal(body, &text); err != nil {
			return nil, err
		}
		return w.s.Root.InstructionFindings(u, text), nil
	case kindRecords:
		var r records
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, fmt.Errorf("records that cannot be read: %w", err)
		}
		return nil, w.s.Root.Record(u, r.Records, r.Sync)
	case kindHealth:
		if w.s.worker(u.UID) != w {
			// A worker replaced (its user's home changed) while it stops: what it says of its
			// sessions would outlive it. Its records are still written.
			return nil, nil
		}
		var ns []HealthNote
		if err := json.Unmarshal(body, &ns); err == nil {
			for _, n := range ns {
				w.s.Root.Health(u, n)
			}
		}
		return nil, nil
	case kindLog:
		var line logLine
		if err := json.Unmarshal(body, &line); err == nil && w.logs.take(time.Now()) {
			w.s.Root.Log(u, slog.Level(line.Level), line.Msg, line.Attrs)
		}
		return nil, nil
	case kindStats:
		var st Stats
		if err := json.Unmarshal(body, &st); err == nil {
			w.mu.Lock()
			w.stats = st
			w.mu.Unlock()
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unknown message %q", kind)
}

// Root's log takes a worker's lines up to logBurst at once and logRate a second after that: a
// worker (its user may have tampered with it) must not fill the log every user's record shares
// a disk with.
const (
	logRate  = 50
	logBurst = 500
)

// logBudget is a token bucket over a worker's log lines.
type logBudget struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func (b *logBudget) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.tokens = logBurst
	} else {
		b.tokens = min(logBurst, b.tokens+now.Sub(b.last).Seconds()*logRate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
