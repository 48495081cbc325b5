package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/cadence"
	"github.com/coworkbridge/coworkbridge/internal/machine"
)

// rescanPeriod is the daemon's default rescan_interval, which the measured managed.json keeps.
const rescanPeriod = 30 * time.Second

// idleRun is what -idle measures: a daemon guarding sessions that make no call.
type idleRun struct {
	bin     string
	users   int // 0: one per-user daemon; n: a system daemon serving n throw-away users
	perUser int // live sessions per user (all of them when users is 0)
	window  time.Duration
	warm    time.Duration // left idle before the window opens
	profile string        // a CPU profile over the window (a development build's)
}

// measureIdle starts the daemon on the sessions, waits until every one is hooked and the
// start-up work is done, then counts the CPU the daemon (and in system mode its workers) spends
// over the window with nothing arriving: the rescans, leases, heartbeats and health an idle
// session costs. It reports that as a share of one core and per session-second, beside the
// resident memory and descriptors held.
func measureIdle(r idleRun) error {
	if longest := cadence.MaxRest * rescanPeriod; r.window < longest {
		// Sessions made together rest in step: their full looks come at the same rescans, and a
		// shorter window may hold all of them or none.
		fmt.Fprintf(os.Stderr, "roundtrip-bench: the window (%v) is shorter than a calm session's longest rest (%v): its figure depends on where the sessions' full looks fall; a steady state takes -idle %v\n", r.window, longest, longest)
	}
	tmp, err := os.MkdirTemp("", "roundtrip-bench-idle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if r.bin, err = buildDaemon(tmp, r.bin); err != nil {
		return err
	}
	var env []string
	workers := ""
	if r.profile != "" {
		env = append(env, "COWORKBRIDGE_CPUPROFILE="+r.profile)
	}
	if r.profile != "" && r.users > 0 {
		// Each worker writes its own, as its user: a folder every user may write in.
		workers = r.profile + ".workers"
		if err := os.MkdirAll(workers, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(workers, 0o1777); err != nil {
			return err
		}
		env = append(env, "COWORKBRIDGE_WORKER_CPUPROFILE="+filepath.Join(workers, "worker"))
	}
	started := time.Now()
	d, sessions, cleanup, err := startIdle(tmp, r, env)
	defer cleanup() // the throw-away users, once the daemon has stopped
	if err != nil {
		return err
	}
	defer d.stop()
	if r.users > 0 {
		defer os.RemoveAll(filepath.Dir(systemSocket()))
	}
	ready := time.Since(started)
	// The first rescan after start reads every session's settings once more (nothing is known
	// of them yet); the idle cost is the rescans after it. Sessions rest longer between full
	// looks the longer they stay calm: -idle-warm lets them come to their longest rest.
	time.Sleep(max(r.warm, rescanPeriod) + 5*time.Second)
	d.settle(time.Duration(sessions) * 10 * time.Millisecond)
	if r.profile != "" {
		d.Process().Process.Signal(syscall.SIGUSR1) // a development build's CPU profile starts here
		if workers != "" {
			for _, pid := range children(d.PID()) {
				syscall.Kill(pid, syscall.SIGUSR1) // and each worker's
			}
			defer fmt.Printf("  the workers' CPU profiles over the window: %s/worker.<uid>; all together: go tool pprof -top %s %s/worker.*\n", workers, r.bin, workers)
		}
	}
	cpu0, wcpu0, t0 := d.cpu(), childrenCPU(d.PID()), time.Now()
	time.Sleep(r.window)
	cpu, wcpu, wall := d.cpu()-cpu0, childrenCPU(d.PID())-wcpu0, time.Since(t0)
	if r.profile != "" {
		d.Process().Process.Signal(syscall.SIGUSR1) // the profile ends with the window, not at the stop
		for _, pid := range children(d.PID()) {
			syscall.Kill(pid, syscall.SIGUSR1) // and each worker's
		}
	}
	total := cpu + wcpu
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	fmt.Printf("%d idle sessions (%s), hooked in %v, measured over %v after %v idle:\n", sessions, r.kind(), ready.Round(time.Second), wall.Round(time.Second), max(r.warm, rescanPeriod).Round(time.Second))
	fmt.Printf("  CPU %.2f%% of a core (daemon %.2f%%, workers %.2f%%): %.1f µs per session-second\n",
		100*total.Seconds()/wall.Seconds(), 100*cpu.Seconds()/wall.Seconds(), 100*wcpu.Seconds()/wall.Seconds(),
		float64(total.Microseconds())/wall.Seconds()/float64(sessions))
	fmt.Printf("  daemon RSS %.1f MB, %d descriptors; workers %d, RSS %.1f MB together\n",
		mb(procRSS(d.PID())), fds(d.PID()), len(children(d.PID())), mb(childrenRSS(d.PID())))
	return nil
}

func (r idleRun) kind() string {
	if r.users > 0 {
		return fmt.Sprintf("system mode, %d users of %d", r.users, r.perUser)
	}
	return "one user's daemon"
}

// startIdle makes the sessions and starts the daemon that guards them, and waits until each is
// hooked; it returns the daemon, the number of sessions and what removes the users it made.
func startIdle(tmp string, r idleRun, env []string) (d daemon, n int, cleanup func(), err error) {
	var cleanups []func()
	cleanup = func() {
		for _, c := range cleanups {
			c()
		}
	}
	d, n, err = startIdleOn(tmp, r, env, func(c func()) { cleanups = append(cleanups, c) })
	return d, n, cleanup, err
}

func startIdleOn(tmp string, r idleRun, env []string, made func(cleanup func())) (daemon, int, error) {
	m, err := machine.New(filepath.Join(tmp, "machine"))
	if err != nil {
		return daemon{}, 0, err
	}
	var all []string
	var hookers []*machine.Machine
	if r.users == 0 {
		for i := range r.perUser {
			s, err := m.NewSession(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i))
			if err != nil {
				return daemon{}, 0, err
			}
			all, hookers = append(all, s), append(hookers, m)
		}
		if err := m.WriteConfig(`{"version":1,"cowork_enabled":true,"mode":"enforce","log_level":"warn"}`); err != nil {
			return daemon{}, 0, err
		}
		d, err := m.Start(r.bin, env...)
		if err != nil {
			return daemon{}, 0, err
		}
		return daemon{d}, len(all), waitAllHooked(daemon{d}, hookers, all)
	}
	if _, err := os.Lstat(systemSocket()); err == nil {
		return daemon{}, 0, fmt.Errorf("%s exists: a system daemon may be running here; stop it to measure", systemSocket())
	}
	var roots []string
	for u := range r.users {
		o, cleanup, err := benchUser(tmp, fmt.Sprintf("cbi%d-", u))
		if err != nil {
			return daemon{}, 0, err
		}
		made(cleanup)
		um, err := machine.NewOwned(filepath.Join(tmp, fmt.Sprintf("u%d", u)), o)
		if err != nil {
			return daemon{}, 0, err
		}
		for i := range r.perUser {
			s, err := um.NewSession(fmt.Sprintf("%04d%04d-0000-4000-8000-000000000000", u, i))
			if err != nil {
				return daemon{}, 0, err
			}
			all, hookers = append(all, s), append(hookers, um)
		}
		roots = append(roots, strconv.Quote(um.Sessions))
	}
	cfg := `{"version":1,"cowork_enabled":true,"mode":"enforce","log_level":"warn","sessions_roots":[` + strings.Join(roots, ",") + `]}`
	if err := m.WriteConfig(cfg); err != nil {
		return daemon{}, 0, err
	}
	for _, um := range slices.Compact(slices.Clone(hookers)) {
		// Each user's machine tells the entry its worker writes from the same configuration.
		if err := um.WriteConfig(cfg); err != nil {
			return daemon{}, 0, err
		}
	}
	d, err := m.StartSystem(r.bin, append([]string{"COWORKBRIDGE_SESSIONS_ROOT="}, env...)...)
	if err != nil {
		return daemon{}, 0, err
	}
	return daemon{d}, len(all), waitAllHooked(daemon{d}, hookers, all)
}

// waitAllHooked waits until the daemon has hooked every session, allowing 20 ms a session.
func waitAllHooked(d daemon, ms []*machine.Machine, sessions []string) error {
	deadline := time.Now().Add(30*time.Second + time.Duration(len(sessions))*20*time.Millisecond)
	for i, s := range sessions {
		if _, err := ms[i].WaitHooked(s, time.Until(deadline)); err != nil {
			d.stop()
			return fmt.Errorf("session %d of %d: %w", i+1, len(sessions), err)
		}
	}
	return nil
}

// fds is the number of descriptors pid holds open.
func fds(pid int) int {
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(entries)
}
