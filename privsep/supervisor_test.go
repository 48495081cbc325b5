package privsep

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// TestMain makes the test binary a worker when the supervisor starts it as one (`run --worker`,
// its link on descriptor 3), as the coworkbridge binary is.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "run" && os.Args[2] == "--worker" {
		f := os.NewFile(3, "root-link")
		conn, err := net.FileConn(f)
		if err != nil {
			os.Exit(64)
		}
		home, _ := os.UserHomeDir()
		if err := Work(context.Background(), conn, WorkerOptions{Home: home, GOOS: runtime.GOOS}); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// judgingRoot is root as the daemon is, in memory: the built-in policy judges, records are kept.
type judgingRoot struct {
	judge judgement.Judge
	cls   *classifier.Classifier
	mu    sync.Mutex
	recs  []telemetry.Record
	notes []HealthNote
}

func (r *judgingRoot) Decide(ctx context.Context, u User, c judgement.Call) judgement.Outcome {
	c.User, c.RecordUser = u.Name, true
	return r.judge.Decide(ctx, c)
}
func (r *judgingRoot) Refuse(u User, c judgement.Call, rule, reason string) judgement.Outcome {
	return r.judge.Refuse(c, rule, reason)
}
func (r *judgingRoot) InstructionFindings(_ User, text string) []classifier.Verdict {
	return r.cls.InstructionFindings(text)
}
func (r *judgingRoot) Record(u User, recs []telemetry.Record, _ bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range recs {
		rec.User = u.Name
		r.recs = append(r.recs, rec)
	}
	return nil
}
func (r *judgingRoot) Health(_ User, n HealthNote) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, n)
}
func (r *judgingRoot) Forget(User) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, HealthNote{Op: "forget"})
}
func (r *judgingRoot) Log(User, slog.Level, string, map[string]any) {}

// nobody is a user to run a worker as, with a home of theirs under dir; the test binary is
// copied where that user can run it.
func nobody(t *testing.T) (User, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("starting a worker as another user needs root")
	}
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	home := filepath.Join(dir, "home")
	must(t, os.MkdirAll(home, 0o755))
	must(t, os.Chown(home, 65534, 65534))
	exe := filepath.Join(dir, "coworkbridge")
	self, err := os.Executable()
	must(t, err)
	in, err := os.Open(self)
	must(t, err)
	defer in.Close()
	out, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY, 0o755)
	must(t, err)
	_, err = io.Copy(out, in)
	must(t, err)
	must(t, out.Close())
	return User{UID: 65534, GID: 65534, Name: "nobody", Home: home}, exe
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func procUID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "Uid:" {
			n, _ := strconv.Atoi(f[2]) // effective
			return n
		}
	}
	return -1
}

// A worker runs as its user, does the session's work as that user (the hook it puts in a
// session is the user's file; nothing is chowned), and is started again when it dies.
func TestAWorkerRunsAsItsUserAndIsStartedAgainWhenItDies(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	u, exe := nobody(t)
	root := filepath.Join(u.Home, "sessions")
	sess := filepath.Join(root, "acct", "org", "local_w1")
	for _, d := range []string{".claude", "outputs"} {
		must(t, os.MkdirAll(filepath.Join(sess, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(sess, ".claude", "settings.json"), []byte("{}"), 0o644))
	must(t, filepath.Walk(u.Home, func(p string, _ os.FileInfo, err error) error { return os.Lchown(p, 65534, 65534) }))

	cls, err := policy.Compile(managedconfig.Policy{})
	must(t, err)
	env := managedconfig.Env{GOOS: "linux", Home: u.Home}
	paths, err := env.Paths()
	must(t, err)
	cfg := managedconfig.Defaults(env, paths)
	cfg.CoworkEnabled, cfg.Mode, cfg.SessionsRoots = true, managedconfig.Enforce, []string{root}
	r := &judgingRoot{judge: judgement.Judge{Cfg: cfg, Rules: cls}, cls: cls}
	h := health.New(nil)
	s := &Supervisor{Exe: exe, Root: r, Users: func() ([]User, error) { return []User{u}, nil }, Rescan: time.Hour,
		Log: slog.New(slog.DiscardHandler), Health: h, MaxFrame: FrameFor(cfg.MaxLineBytes)}
	s.Configure(func(User) Setup { return Setup{On: true, Config: cfg, User: u.Name} })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	pid := waitRunning(t, s)
	if uid := procUID(pid); uid != 65534 {
		t.Fatalf("the worker runs as uid %d, want 65534", uid)
	}
	settings := filepath.Join(sess, ".claude", "settings.json")
	cbtest.WaitForf(t, func() bool {
		b, _ := os.ReadFile(settings)
		return strings.Contains(string(b), "coworkbridge")
	}, func() string { return "the worker to hook the session" })
	fi, err := os.Stat(settings)
	must(t, err)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 {
		t.Errorf("the hooked settings belong to uid %d, not the user's", st.Uid)
	}

	must(t, syscall.Kill(pid, syscall.SIGKILL))
	cbtest.WaitForf(t, func() bool {
		ws := s.Workers()
		return len(ws) == 1 && ws[0].Running && ws[0].Starts == 2 && ws[0].PID != pid
	}, func() string { return "the worker to start again" })
	if n := h.Snapshot(false); !strings.Contains(strings.Join(warningCodes(n), ","), string(health.CodeWorkerRestarted)) {
		t.Errorf("the restart is not a warning: %v", warningCodes(n))
	}
	// Root forgot what the first worker saw as the second started, and the second sees the
	// session again: it counts again, and nothing the first saw lingers.
	seenAfterForget := func() (forgets int, seen bool) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, n := range r.notes {
			switch {
			case n.Op == "forget":
				forgets, seen = forgets+1, false
			case n.Op == "session_seen" && n.ID == "local_w1":
				seen = true
			}
		}
		return forgets, seen
	}
	cbtest.WaitForf(t, func() bool { f, seen := seenAfterForget(); return f == 2 && seen },
		func() string {
			f, seen := seenAfterForget()
			return fmt.Sprintf("root to forget at each start (%d) and the session seen after (%v)", f, seen)
		})
}

// waitRunning waits for s's one worker to run, and returns its pid.
func waitRunning(t *testing.T, s *Supervisor) (pid int) {
	t.Helper()
	cbtest.WaitForf(t, func() bool {
		ws := s.Workers()
		if len(ws) == 1 && ws[0].Running {
			pid = ws[0].PID
			return true
		}
		return false
	}, func() string { return "the worker to start" })
	return pid
}

func warningCodes(s health.Snapshot) []string {
	var out []string
	for _, w := range s.Warnings {
		out = append(out, string(w.Code))
	}
	return out
}

// forgetRoot is nopRoot telling which users it was told to forget, and the health notes it was
// given.
type forgetRoot struct {
	nopRoot
	forgot chan User
	noted  chan HealthNote
}

func (r forgetRoot) Forget(u User)               { r.forgot <- u }
func (r forgetRoot) Health(_ User, n HealthNote) { r.noted <- n }

// A user no longer listed (removed from the Mac) has their worker stopped at the next rescan,
// and root is told to forget them once it has stopped, so that what it reported stops counting;
// root was told so too as the worker started, before its first note.
func TestARemovedUsersWorkerStops(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	u, exe := nobody(t)
	var mu sync.Mutex
	listed := []User{u}
	users := func() ([]User, error) {
		mu.Lock()
		defer mu.Unlock()
		return listed, nil
	}
	root := forgetRoot{forgot: make(chan User, 2), noted: make(chan HealthNote, 64)}
	s := &Supervisor{Exe: exe, Root: root, Users: users, Rescan: time.Second,
		Log: slog.New(slog.DiscardHandler), Health: health.New(nil), MaxFrame: 1 << 20}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	pid := waitRunning(t, s)
	if got := <-root.forgot; got.UID != u.UID {
		t.Fatalf("root was told to forget %+v as the worker of %+v started", got, u)
	}
	select {
	case u := <-root.forgot:
		t.Fatalf("root was told to forget %s again while listed", u.Name)
	default:
	}
	mu.Lock()
	listed = nil
	mu.Unlock()
	cbtest.WaitForf(t, func() bool { return len(s.Workers()) == 0 && procUID(pid) == -1 },
		func() string { return fmt.Sprintf("the removed user's worker (pid %d) to stop", pid) })
	select {
	case got := <-root.forgot:
		if got.UID != u.UID || got.Name != u.Name {
			t.Errorf("root was told to forget %+v, want %+v", got, u)
		}
	case <-time.After(10 * time.Second):
		t.Error("root was never told to forget the removed user")
	}
}

// A worker replaced while it stops (its user's home changed) says nothing more of its sessions:
// what it says would outlive it, since the worker after it reports afresh. What it records is
// still written.
func TestAReplacedWorkersHealthNotesAreDroppedAndItsRecordsKept(t *testing.T) {
	root := &recordingRoot{forgetRoot: forgetRoot{forgot: make(chan User, 1), noted: make(chan HealthNote, 4)}}
	s := &Supervisor{Root: root, Log: slog.New(slog.DiscardHandler), workers: map[uint32]*worker{}}
	old := &worker{s: s, user: User{UID: 501, Name: "ada", Home: "/Users/ada"}}
	cur := &worker{s: s, user: User{UID: 501, Name: "ada", Home: "/Volumes/home/ada"}}
	s.workers[501] = cur
	notes, _ := json.Marshal([]HealthNote{{ID: "local_a"}})
	recs, _ := json.Marshal(records{Records: []telemetry.Record{{RID: "r1"}}})
	for _, w := range []*worker{old, cur} {
		if _, err := w.handle(context.Background(), kindHealth, notes); err != nil {
			t.Fatal(err)
		}
		if _, err := w.handle(context.Background(), kindRecords, recs); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(root.noted); n != 1 {
		t.Errorf("root was given %d health notes, want the current worker's one", n)
	}
	if root.recorded != 2 {
		t.Errorf("root wrote %d records, want both workers'", root.recorded)
	}
}

// recordingRoot counts the records it is given.
type recordingRoot struct {
	forgetRoot
	recorded int
}

func (r *recordingRoot) Record(_ User, recs []telemetry.Record, _ bool) error {
	r.recorded += len(recs)
	return nil
}

// A uid whose user left (or changed name or home) and came back gets a new worker only once the
// old one has ended and root has forgotten what it reported: otherwise the old one's late
// Forget, keyed by the uid, would erase what the new one had already reported.
func TestAUsersNextWorkerWaitsForTheLastOneOfTheirUID(t *testing.T) {
	for _, tc := range []struct {
		name string
		gone bool // the old worker's user was removed, rather than replaced in one scan
	}{{"removed and listed again", true}, {"home changed", false}} {
		t.Run(tc.name, func(t *testing.T) {
			root := forgetRoot{forgot: make(chan User, 4), noted: make(chan HealthNote, 4)}
			s := &Supervisor{Exe: filepath.Join(t.TempDir(), "missing"), Root: root,
				Log: slog.New(slog.DiscardHandler), Health: health.New(nil), workers: map[uint32]*worker{}}
			ada := User{UID: 501, Name: "ada", Home: "/Users/ada"}
			stopping := make(chan struct{}) // the old worker, slow to stop
			old := &worker{s: s, user: ada, cancel: func() {}, ended: stopping}
			old.gone.Store(true)
			s.last = map[uint32]*worker{501: old}
			if !tc.gone {
				s.workers[501] = old
			}
			again := User{UID: 501, Name: "ada", Home: "/Volumes/home/ada"}
			s.Users = func() ([]User, error) { return []User{again}, nil }
			ctx, cancel := context.WithCancel(context.Background())
			var running sync.WaitGroup
			defer func() { cancel(); running.Wait() }()

			s.follow(ctx, &running)
			time.Sleep(200 * time.Millisecond)
			w := s.worker(501)
			if w == nil || w == old {
				t.Fatal("the listed user has no new worker")
			}
			w.mu.Lock()
			tried := w.lastErr
			w.mu.Unlock()
			if tried != "" {
				t.Fatalf("the new worker was started (%s) while the last of its uid was still stopping", tried)
			}
			close(stopping)
			cbtest.WaitForf(t, func() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.lastErr != "" },
				func() string { return "the new worker to be started once the old one ended" })
		})
	}
}

// A worker starts with its user's HOME, USER, LOGNAME and a fixed PATH, nothing of root's
// environment, and what the daemon adds (a development build's profiles) after them.
func TestAWorkersEnvironmentIsItsUsersAndWhatTheDaemonAdds(t *testing.T) {
	t.Setenv("SECRET_OF_ROOT", "x")
	u := User{UID: 501, GID: 20, Name: "ada", Home: "/Users/ada"}
	for _, tc := range []struct {
		add  []string
		want []string
	}{
		{nil, []string{"HOME=/Users/ada", "USER=ada", "LOGNAME=ada", "PATH=/usr/bin:/bin:/usr/sbin:/sbin"}},
		{[]string{"COWORKBRIDGE_WORKER_CPUPROFILE=/tmp/p"}, []string{"HOME=/Users/ada", "USER=ada", "LOGNAME=ada", "PATH=/usr/bin:/bin:/usr/sbin:/sbin", "COWORKBRIDGE_WORKER_CPUPROFILE=/tmp/p"}},
	} {
		w := &worker{s: &Supervisor{Exe: "/usr/local/bin/coworkbridge", WorkerEnv: tc.add}, user: u}
		if got := w.command(nil).Env; !slices.Equal(got, tc.want) {
			t.Errorf("with %v added: %v, want %v", tc.add, got, tc.want)
		}
	}
}
