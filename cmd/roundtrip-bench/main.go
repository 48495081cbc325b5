// Command roundtrip-bench measures the enforce round trip the way a Cowork session lives it: the
// real coworkbridge daemon (a separate process) guards N live sessions, and C concurrent callers
// run the injected hook with /bin/sh -c, payload on stdin, as Claude Code does. It reports hook
// wall time (p50/p95/p99), events per second, the daemon's CPU time per event and its peak
// resident memory, then runs the same load with the spool watcher switched off (polling every
// 100 ms, the design the watcher replaced) and prints the ratio.
//
// With -flood N, one more session's spool takes N forged lines a second while each measurement
// runs: the other sessions' round trip beside a hostile agent flooding its own spool.
//
// It is a benchmark harness, not part of the product:
//
//	go run ./cmd/roundtrip-bench -sessions 1,10,100,1000 -concurrency 1,8 -calls 300
package main

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/coworkbridge/coworkbridge/dropin"
	"github.com/coworkbridge/coworkbridge/internal/cadence"
	"github.com/coworkbridge/coworkbridge/internal/machine"
	"github.com/coworkbridge/coworkbridge/session"
)

func main() {
	bin := flag.String("bin", "", "coworkbridge binary (default: built from this checkout)")
	sessions := flag.String("sessions", "1,10,100,1000", "live session counts to measure")
	conc := flag.String("concurrency", "1,8", "concurrent hook callers to measure")
	calls := flag.Int("calls", 300, "hook calls per measurement")
	poll := flag.Duration("poll", 100*time.Millisecond, "polling period of the comparison run; 0 skips it")
	profile := flag.String("cpuprofile", "", "write each daemon's CPU profile over the measured calls to this path, suffixed .<sessions>-<callers>-<design> (needs -bin built with -tags coworkbridge_dev)")
	socket := flag.Bool("socket", os.Geteuid() == 0, "also measure system mode: hooks answered over the daemon's socket, and VM-loop hooks answered by a user's worker (needs root and useradd: the sessions are a throw-away user's; uses the platform's socket path; with -bin, coworkbridge-hook must be beside it)")
	only := flag.String("only", "", "measure only these designs (comma-separated names, as the report prints them)")
	users := flag.Int("users", 0, "instead, measure system mode's memory with this many users (throw-away, one live session each): the daemon's and its workers' resident memory (needs root and useradd)")
	vm := flag.Bool("vm", true, "also measure hooks as Cowork's VM runs them: the host channel out of sight, events through the session's spool")
	floor := flag.Bool("floor", false, "also measure the floor: the same hooks answered by a Go process that only watches, reads and renames (see floor.go)")
	serve := flag.String("floor-serve", "", "internal: run as the floor (host or vm), the folders to serve on stdin")
	flood := flag.Int("flood", 0, "forged spool lines a second that one more session (not called) appends while each measurement runs, as a hostile agent flooding its own spool; 0: none")
	idle := flag.Duration("idle", 0, "instead, measure idle sessions over this window (at least two rescans: 90s): the daemon's CPU with nothing arriving, per session-second; the sessions are the first of -sessions, or with -users that many throw-away users of -per-user sessions each in system mode (needs root and useradd); -cpuprofile profiles the window: root's daemon, and with -users each worker, in FILE.workers/worker.<uid>")
	perUser := flag.Int("per-user", 1, "with -users: live sessions per user")
	idleWarm := flag.Duration("idle-warm", rescanPeriod, fmt.Sprintf("with -idle, how long the sessions are left idle before the window opens (at least one rescan): calm sessions rest longer between full looks the longer they stay calm, and come to their longest rest after %d rescans (-idle-warm %v at the default rescan_interval; then -idle %v holds one full look of each)", cadence.ToLongest(), time.Duration(cadence.ToLongest()+1)*rescanPeriod, cadence.MaxRest*rescanPeriod))
	flag.Parse()
	if *idle > 0 {
		r := idleRun{bin: *bin, users: *users, perUser: *perUser, window: *idle, warm: *idleWarm, profile: *profile}
		if *users == 0 {
			r.perUser = ints(*sessions)[0]
		}
		if err := measureIdle(r); err != nil {
			fmt.Fprintln(os.Stderr, "roundtrip-bench:", err)
			os.Exit(1)
		}
		return
	}
	if *serve != "" {
		if err := serveFloor(*serve); err != nil {
			fmt.Fprintln(os.Stderr, "roundtrip-bench floor:", err)
			os.Exit(1)
		}
		return
	}
	if *users > 0 {
		if err := measureUsers(*bin, *users); err != nil {
			fmt.Fprintln(os.Stderr, "roundtrip-bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*bin, ints(*sessions), ints(*conc), *calls, *poll, *vm, *floor, *socket, *profile, *only, *flood); err != nil {
		fmt.Fprintln(os.Stderr, "roundtrip-bench:", err)
		os.Exit(1)
	}
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "roundtrip-bench: %q is not a positive number\n", f)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}

// design is one way of answering the hooks.
type design struct {
	name  string
	poll  time.Duration // the daemon polls spools at this period instead of watching them
	vm    bool          // the hooks cannot see the host channel, as in Cowork's VM
	floor bool          // the daemon hooks the sessions, then the floor answers (floor.go)
	// socket: system mode, as root: the hooks are `coworkbridge hook --system` in exec form (as
	// the system drop-in runs them) and the daemon answers over its socket.
	socket bool
	// system: system mode, the sessions a throw-away user's, their hooks run as that user and
	// answered (in the VM loop) by that user's worker.
	system bool
}

// result is one measurement.
type result struct {
	sessions, conc, calls int
	design                string
	p50, p95, p99         time.Duration
	perSec                float64
	cpuPerEvent           time.Duration
	rssMB                 float64
	denies                int
	// shP50 and hookP50: a bare `sh -c true` and the whole hook process, in pairs (socket only).
	shP50, hookP50 time.Duration
	// workersCPU and workersMB: system mode's workers' CPU per event and resident memory.
	workersCPU time.Duration
	workersMB  float64
}

func run(bin string, sessionCounts, concs []int, calls int, poll time.Duration, vm, floor, socket bool, profile, only string, flood int) error {
	tmp, err := os.MkdirTemp("", "roundtrip-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var owner *machine.Owner
	if socket {
		o, cleanup, err := benchUser(tmp, "cbbench")
		if err != nil {
			return err
		}
		defer cleanup()
		owner = o
	}
	if bin == "" {
		bin = filepath.Join(tmp, "coworkbridge")
		for out, pkg := range map[string]string{bin: "./cmd/coworkbridge", dropin.HookProgram(bin): "./cmd/coworkbridge-hook"} {
			if err := buildInstalled(out, pkg); err != nil {
				return err
			}
		}
	}
	var results []result
	// On this machine the hooks see the daemon's state, as they do in Cowork's host loop, and use
	// the host channel; the "-vm" designs hide it from them, as the VM does, so that they go
	// through the session's spool.
	designs := []design{{name: "fsnotify"}}
	if socket {
		designs = append(designs, design{name: "socket", socket: true, system: true})
	}
	if floor {
		designs = append(designs, design{name: "floor", floor: true})
	}
	if vm {
		designs = append(designs, design{name: "fsnotify-vm", vm: true})
		if floor {
			designs = append(designs, design{name: "floor-vm", vm: true, floor: true})
		}
		if socket {
			designs = append(designs, design{name: "system-vm", vm: true, system: true})
		}
	}
	if poll > 0 {
		designs = append(designs, design{name: "poll-" + poll.String() + "-vm", poll: poll, vm: true})
	}
	if only != "" {
		names := strings.Split(only, ",")
		designs = slices.DeleteFunc(designs, func(d design) bool { return !slices.Contains(names, d.name) })
	}
	for _, n := range sessionCounts {
		for _, c := range concs {
			for _, d := range designs {
				var env []string
				if profile != "" {
					env = append(env, fmt.Sprintf("COWORKBRIDGE_CPUPROFILE=%s.%d-%d-%s", profile, n, c, d.name))
				}
				r, err := measure(bin, filepath.Join(tmp, fmt.Sprintf("%d-%d-%s", n, c, d.name)), n, c, calls, d, env, owner, flood)
				if err != nil {
					return fmt.Errorf("%d sessions, %d callers, %s: %w", n, c, d.name, err)
				}
				r.design = d.name
				results = append(results, r)
				fmt.Fprintf(os.Stderr, "done: %d sessions, %d callers, %s\n", n, c, d.name)
			}
		}
	}
	report(results)
	return nil
}

func report(rs []result) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sessions\tcallers\tdesign\tcalls\tp50 ms\tp95 ms\tp99 ms\tevents/s\tdaemon CPU µs/event\tpeak RSS MB\tworkers CPU µs/event\tworkers RSS MB\t")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }
	for _, r := range rs {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%s\t%s\t%s\t%.0f\t%d\t%.1f\t%d\t%.1f\t\n", r.sessions, r.conc, r.design, r.calls,
			ms(r.p50), ms(r.p95), ms(r.p99), r.perSec, r.cpuPerEvent.Microseconds(), r.rssMB, r.workersCPU.Microseconds(), r.workersMB)
	}
	tw.Flush()
	same := func(a result, design func(string) bool) (result, bool) {
		i := slices.IndexFunc(rs, func(b result) bool { return b.sessions == a.sessions && b.conc == a.conc && design(b.design) })
		if i < 0 {
			return result{}, false
		}
		return rs[i], true
	}
	for _, a := range rs {
		if a.design == "socket" {
			if b, ok := same(a, func(d string) bool { return d == "fsnotify" }); ok {
				fmt.Printf("%d sessions, %d callers: socket/host channel: daemon CPU per event %.2fx, p50 %.2fx, p99 %.2fx\n", a.sessions, a.conc,
					float64(a.cpuPerEvent)/float64(b.cpuPerEvent), float64(a.p50)/float64(b.p50), float64(a.p99)/float64(b.p99))
			}
			if a.shP50 > 0 {
				fmt.Printf("%d sessions: hook --system process p50 %.1f ms, bare sh -c true p50 %.1f ms: %.1fx\n", a.sessions,
					float64(a.hookP50.Microseconds())/1000, float64(a.shP50.Microseconds())/1000, float64(a.hookP50)/float64(a.shP50))
			}
		}
		switch a.design {
		case "system-vm":
			if b, ok := same(a, func(d string) bool { return d == "fsnotify-vm" }); ok {
				fmt.Printf("%d sessions, %d callers: system-vm (through a worker)/fsnotify-vm (per-user daemon): p50 %.2fx, p99 %.2fx, CPU per event (root and worker) %.2fx\n",
					a.sessions, a.conc, float64(a.p50)/float64(b.p50), float64(a.p99)/float64(b.p99),
					float64(a.cpuPerEvent+a.workersCPU)/float64(b.cpuPerEvent))
			}
		case "fsnotify-vm":
			if b, ok := same(a, func(d string) bool { return strings.HasPrefix(d, "poll-") }); ok {
				fmt.Printf("%d sessions, %d callers: %s/fsnotify p50 %.1fx, p99 %.1fx\n", a.sessions, a.conc, b.design,
					float64(b.p50)/float64(a.p50), float64(b.p99)/float64(a.p99))
			}
		}
		if f, ok := same(a, func(d string) bool { return d == floorOf(a.design) }); ok && strings.HasPrefix(a.design, "fsnotify") {
			fmt.Printf("%d sessions, %d callers: %s daemon CPU %d µs/event, %d above the floor's %d\n", a.sessions, a.conc, a.design,
				a.cpuPerEvent.Microseconds(), (a.cpuPerEvent - f.cpuPerEvent).Microseconds(), f.cpuPerEvent.Microseconds())
		}
	}
}

// floorOf names the floor design measured beside a design.
func floorOf(design string) string { return strings.Replace(design, "fsnotify", "floor", 1) }

// daemon is a running coworkbridge with what the benchmark reads of it.
type daemon struct{ *machine.Daemon }

func startDaemon(m *machine.Machine, bin string, ds design, extra []string) (daemon, error) {
	cfg := `{"version":1,"cowork_enabled":true,"mode":"enforce","log_level":"warn"}`
	if ds.socket {
		// Under lockdown the drop-in's hook judges every call: none stands aside for the
		// session's own.
		cfg = `{"version":1,"cowork_enabled":true,"mode":"enforce","log_level":"warn","lockdown":true}`
	}
	poll := ds.poll
	if err := m.WriteConfig(cfg); err != nil {
		return daemon{}, err
	}
	// Hundreds of calls a second from one session would be a flood in a deployment.
	env := append([]string{"COWORKBRIDGE_SESSION_BUDGET=100000000"}, extra...)
	if poll > 0 {
		env = append(env, "COWORKBRIDGE_SPOOL_POLL="+poll.String())
	}
	if ds.system {
		d, err := m.StartSystem(bin, env...)
		return daemon{d}, err
	}
	d, err := m.Start(bin, env...)
	return daemon{d}, err
}

// systemSocket is where a release build's hook --system connects on this platform.
func systemSocket() string {
	if runtime.GOOS == "darwin" {
		return "/var/run/coworkbridge/hook.sock"
	}
	return "/run/coworkbridge/hook.sock"
}

// waitSocket waits for the system daemon's socket.
func waitSocket(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if fi, err := os.Lstat(systemSocket()); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("the system daemon did not listen at %s", systemSocket())
}

// responder is what answers the hooks: the daemon or the floor.
type responder interface {
	cpu() time.Duration
	stop() (peakRSS int64, err error)
}

// cpu is the daemon's CPU time so far.
func (d daemon) cpu() time.Duration { return procCPU(d.PID()) }

// floor is the floor's process.
type floor struct{ cmd *exec.Cmd }

// startFloorFor starts the floor on the sessions' folders the hooks hand events over in.
func startFloorFor(m *machine.Machine, sessions []string, vm bool) (floor, error) {
	var bridges []string
	for _, s := range sessions {
		b := filepath.Join(s, ".claude", "coworkbridge")
		if !vm {
			b = filepath.Join(session.ChannelDir(filepath.Join(m.State, "channel"), filepath.Base(s)), session.BridgeDir)
		}
		bridges = append(bridges, b)
	}
	cmd, err := startFloor(bridges, vm)
	return floor{cmd}, err
}

func (f floor) cpu() time.Duration { return procCPU(f.cmd.Process.Pid) }

func (f floor) stop() (int64, error) {
	f.cmd.Process.Signal(syscall.SIGTERM)
	err := f.cmd.Wait()
	var rss int64
	if ru, ok := f.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024
	}
	return rss, err
}

// procCPU is a process's CPU time so far (Linux: /proc; elsewhere unknown).
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// settle waits until the daemon has done its start-up work (hooking and watching every session),
// so that the CPU counted per event is the events' own: its CPU time stops growing for half a
// second, or the limit passes.
func (d daemon) settle(limit time.Duration) {
	deadline := time.Now().Add(limit)
	last, still := d.cpu(), 0
	for still < 2 && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		now := d.cpu()
		if now == last {
			still++
		} else {
			still = 0
		}
		last = now
	}
}

func (d daemon) stop() (peakRSS int64, err error) {
	err = d.Stop(30 * time.Second)
	if ru, ok := d.Process().ProcessState.SysUsage().(*syscall.Rusage); ok {
		peakRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return peakRSS, err
}

func measure(bin, dir string, n, conc, calls int, ds design, env []string, owner *machine.Owner, flood int) (result, error) {
	r := result{sessions: n, conc: conc, calls: calls}
	m, err := machine.New(dir)
	if ds.system {
		m, err = machine.NewOwned(dir, owner)
	}
	if err != nil {
		return r, err
	}
	var sessions []string
	for i := range n {
		s, err := m.NewSession(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i))
		if err != nil {
			return r, err
		}
		sessions = append(sessions, s)
	}
	var flooder string
	if flood > 0 {
		if flooder, err = m.NewSession("f100d000-0000-4000-8000-000000000000"); err != nil {
			return r, err
		}
	}
	if ds.system {
		if _, err := os.Lstat(systemSocket()); err == nil {
			return r, fmt.Errorf("%s exists: a system daemon may be running here; stop it (or remove a stale socket) to measure", systemSocket())
		}
	}
	d, err := startDaemon(m, bin, ds, env)
	if err != nil {
		return r, err
	}
	hooks := make([]string, len(sessions))
	deadline := time.Now().Add(60 * time.Second)
	for i, s := range sessions {
		if hooks[i], err = m.WaitHooked(s, time.Until(deadline)); err != nil {
			d.stop()
			return r, fmt.Errorf("%w (daemon log: %s)", err, m.DaemonLog())
		}
	}
	if flooder != "" {
		if _, err := m.WaitHooked(flooder, time.Until(deadline)); err != nil {
			d.stop()
			return r, err
		}
		stopFlood := floodSpool(filepath.Join(flooder, session.SpoolFile), flood)
		defer stopFlood()
	}
	if ds.vm {
		for i, h := range hooks {
			hooks[i] = strings.ReplaceAll(h, string(filepath.Separator)+"channel"+string(filepath.Separator), string(filepath.Separator)+"not-in-the-vm"+string(filepath.Separator))
		}
	}
	call := func(s int, payload []byte) ([]byte, time.Duration, error) {
		return m.CallHook(sessions[s], hooks[s], payload)
	}
	if ds.socket {
		if err := waitSocket(30 * time.Second); err != nil {
			d.stop()
			return r, err
		}
		call = func(s int, payload []byte) ([]byte, time.Duration, error) {
			return m.ExecHook(sessions[s], []string{dropin.HookProgram(bin), "--system"}, payload)
		}
	}
	var p responder = d
	if ds.floor {
		if _, err := d.stop(); err != nil {
			return r, fmt.Errorf("daemon exit: %w", err)
		}
		if p, err = startFloorFor(m, sessions, ds.vm); err != nil {
			return r, err
		}
	} else {
		d.settle(30 * time.Second)
	}
	if slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "COWORKBRIDGE_CPUPROFILE=") }) {
		d.Process().Process.Signal(syscall.SIGUSR1) // a development build's CPU profile starts here
	}
	cpu0, wcpu0 := p.cpu(), childrenCPU(d.PID())
	lat, denies, wall, err := load(len(sessions), call, conc, calls, !ds.floor)
	cpu, wcpu := p.cpu()-cpu0, childrenCPU(d.PID())-wcpu0
	workersRSS := childrenRSS(d.PID())
	if ds.system {
		defer os.RemoveAll(filepath.Dir(systemSocket())) // the folders the daemon made
	}
	if err == nil && ds.socket && conc == 1 {
		r.shP50, r.hookP50, err = processCost(func(payload []byte) ([]byte, time.Duration, error) { return call(0, payload) })
	}
	rss, serr := p.stop()
	if err != nil {
		return r, err
	}
	if serr != nil {
		return r, fmt.Errorf("%s exit: %w", ds.name, serr)
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	r.p50, r.p95, r.p99 = pct(0.50), pct(0.95), pct(0.99)
	r.perSec = float64(len(lat)) / wall.Seconds()
	r.cpuPerEvent = cpu / time.Duration(len(lat))
	r.rssMB = float64(rss) / (1 << 20)
	r.workersCPU = wcpu / time.Duration(len(lat))
	r.workersMB = float64(workersRSS) / (1 << 20)
	r.denies = denies
	return r, nil
}

// commands are the calls played in turn, with whether the default policy denies them.
var commands = []struct {
	cmd  string
	deny bool
}{
	{"ls -la", false}, {"git status", false}, {"npm test", false}, {"cat README.md", false},
	{"rm -rf ~", true}, {"git push --force origin main", true}, {"python3 -c 'print(1)'", false}, {"grep -rn TODO src/", false},
}

// load runs calls hooks from conc callers on random sessions and returns each hook's wall time.
// judged: the answers must be the policy's; otherwise (the floor) every call must go through.
func load(sessions int, call func(s int, payload []byte) ([]byte, time.Duration, error), conc, calls int, judged bool) ([]time.Duration, int, time.Duration, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var denies int
	var firstErr error
	next := make(chan int, calls)
	for i := range calls {
		next <- i
	}
	close(next)
	started := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := range next {
				s := rand.IntN(sessions)
				c := commands[i%len(commands)]
				outb, took, err := call(s, machine.BashPayload(c.cmd))
				out := string(outb)
				if err == nil && (out != "") != (c.deny && judged) {
					// A harmless call denied means the hook timed out: the daemon did not answer.
					err = fmt.Errorf("%q answered %q", c.cmd, strings.TrimSpace(out))
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lat = append(lat, took)
				if strings.Contains(out, `"deny"`) {
					denies++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	wall := time.Since(started)
	if firstErr != nil {
		return nil, 0, 0, firstErr
	}
	return lat, denies, wall, nil
}

// processCost measures, in alternating pairs so that the machine's noise falls on both alike, a
// bare `sh -c true` and the whole hook process answering a harmless call; it returns the p50 of
// each.
func processCost(call func(payload []byte) ([]byte, time.Duration, error)) (sh, hook time.Duration, err error) {
	const pairs = 200
	var shs, hooks []time.Duration
	payload := machine.BashPayload("ls -la")
	for range pairs {
		started := time.Now()
		if err := exec.Command("/bin/sh", "-c", "true").Run(); err != nil {
			return 0, 0, err
		}
		shs = append(shs, time.Since(started))
		out, took, err := call(payload)
		if err != nil || len(out) != 0 {
			return 0, 0, fmt.Errorf("hook --system on a harmless call: %q %v", out, err)
		}
		hooks = append(hooks, took)
	}
	slices.Sort(shs)
	slices.Sort(hooks)
	return shs[pairs/2], hooks[pairs/2], nil
}

// buildInstalled builds pkg as releases are built (without cgo, deploy/README.md) and leaves at
// out a copy, as a package installs it: on this project's Linux machines a program run from the
// file the linker wrote starts about 2 ms slower than a byte-identical copy, which no Mac runs.
func buildInstalled(out, pkg string) error {
	built := out + ".built"
	build := exec.Command("go", "build", "-o", built, pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build %s (run from the module root, or pass -bin): %w", pkg, err)
	}
	data, err := os.ReadFile(built)
	if err != nil {
		return fmt.Errorf("read the built %s: %w", pkg, err)
	}
	if err := os.WriteFile(out, data, 0o755); err != nil {
		return fmt.Errorf("install %s: %w", out, err)
	}
	return os.Remove(built)
}
