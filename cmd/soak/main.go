// Command soak puts the real coworkbridge daemon through a long run and the faults of a working
// Mac, then checks that nothing was lost or doubled and that it gave back what it took. It is a
// test harness, not part of the product (Linux only: it reads the daemon's /proc entries).
//
// Three phases, each optional:
//
//   - soak: N live sessions in enforce mode, callers running the injected hook as Claude Code
//     does (half the sessions as Cowork's host loop runs it, half as its VM does, through the
//     session's spool), for a duration, with K SIGKILLs of the daemon spread over it;
//
//   - churn: M sessions created under their own account and org folders, a batch at a time,
//     each waited for until hooked, then deleted with rm -rf;
//
//   - check: every call whose event was handed over (all but those the hook denied at once
//     because the daemon was down) is in the decision log exactly once; no harmful call was let
//     through; RSS, descriptors and inotify watches (the daemon's count and the kernel's) over
//     time.
//
//     go run ./cmd/soak -sessions 200 -duration 15m -kills 50 -churn 2000
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/machine"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

type options struct {
	bin               string
	sessions, callers int
	duration          time.Duration
	kills, churn      int
	keep              bool
	mode              string
	bombMiB, capMiB   int
	system            bool
	heapProfile       string
	settle            time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "coworkbridge binary (default: built from this checkout)")
	flag.IntVar(&o.sessions, "sessions", 200, "live sessions during the soak")
	flag.IntVar(&o.callers, "callers", 4, "concurrent hook callers")
	flag.DurationVar(&o.duration, "duration", 15*time.Minute, "length of the soak (0 skips it)")
	flag.IntVar(&o.kills, "kills", 50, "SIGKILLs of the daemon spread over the soak")
	flag.IntVar(&o.churn, "churn", 2000, "sessions created and deleted after the soak (0 skips it)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary folder")
	flag.IntVar(&o.bombMiB, "bomb", 0, "MiB of tool calls with 8 MiB inputs and no results written into one session's transcript during the soak (the transcript bomb)")
	flag.IntVar(&o.capMiB, "memcap", 0, "run the daemon with its address space capped at this many MiB (prlimit --as), 0 for none")
	flag.StringVar(&o.mode, "mode", "enforce", "the daemon's mode: enforce (harmful calls must be denied) or observe (all are allowed and recorded)")
	flag.StringVar(&o.heapProfile, "heapprofile", "", "write the daemon's heap profile at each sample to this path, suffixed .<phase> (go tool pprof -sample_index=inuse_space); builds the daemon with -tags coworkbridge_dev, which a -bin must have been built with too")
	flag.DurationVar(&o.settle, "settle", 3*time.Second, "how long after the churn its sample is taken (memory returned after churn is judged 60 s after it)")
	flag.BoolVar(&o.system, "system", false, "system mode (needs root and useradd): the root daemon, the sessions a throw-away user's, answered by that user's worker; a third of the calls through the socket (coworkbridge-hook --system); each SIGKILL is the root daemon's, its workers dying with it")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	tmp, err := os.MkdirTemp("", "coworkbridge-soak-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Println("files kept in", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	if o.bin == "" {
		o.bin = filepath.Join(tmp, "coworkbridge")
		for out, pkg := range map[string]string{o.bin: "./cmd/coworkbridge", filepath.Join(tmp, "coworkbridge-hook"): "./cmd/coworkbridge-hook"} {
			args := []string{"build", "-o", out}
			if o.heapProfile != "" {
				args = append(args, "-tags", "coworkbridge_dev")
			}
			build := exec.Command("go", append(args, pkg)...)
			build.Stderr = os.Stderr
			if err := build.Run(); err != nil {
				return fmt.Errorf("build %s (run from the module root, or pass -bin): %w", pkg, err)
			}
		}
	}
	m, err := machine.New(tmp)
	if o.system {
		owner, cleanup, uerr := machine.MakeUser(tmp, fmt.Sprintf("cbsoak%d", os.Getpid()%100000))
		if uerr != nil {
			return uerr
		}
		defer cleanup()
		m, err = machine.NewOwned(tmp, owner)
		defer os.RemoveAll(systemSocketDir())
	}
	if err != nil {
		return err
	}
	if o.capMiB > 0 { // prlimit execs the daemon: same pid, so /proc still reads the daemon
		capped := filepath.Join(tmp, "capped")
		script := fmt.Sprintf("#!/bin/sh\nexec prlimit --as=%d -- %q \"$@\"\n", int64(o.capMiB)<<20, o.bin)
		if err := os.WriteFile(capped, []byte(script), 0o700); err != nil {
			return err
		}
		o.bin = capped
	}
	h := &harness{Machine: m, dir: tmp, bin: o.bin, mode: o.mode, system: o.system, heapTo: o.heapProfile}
	if err := h.start(); err != nil {
		return err
	}
	defer h.stop()
	time.Sleep(2 * time.Second) // its first scan and heartbeat
	h.sample("start")
	if o.duration > 0 {
		if err := h.soak(o); err != nil {
			return err
		}
		h.sample("after soak")
	}
	if o.churn > 0 {
		if err := h.churnSessions(o.churn); err != nil {
			return err
		}
		time.Sleep(o.settle) // at least a heartbeat (1 s here) and the deleted trees' events
		h.sample("after churn")
	}
	if err := h.stop(); err != nil {
		return err
	}
	return h.check()
}

// systemSocketDir is the folder of the platform's system socket, which a system daemon makes.
func systemSocketDir() string {
	if runtime.GOOS == "darwin" {
		return "/var/run/coworkbridge"
	}
	return "/run/coworkbridge"
}

// harness runs one daemon (restarted after each kill) on one temporary tree.
type harness struct {
	*machine.Machine
	dir, bin string
	mode     string
	system   bool
	d        *machine.Daemon
	mu       sync.Mutex
	stopped  bool

	// heapTo, when set, is where each sample's heap profile of the daemon goes (.<phase>).
	heapTo string

	seq     atomic.Int64
	kills   int
	calls   sync.Map // marker -> call
	samples []sample
}

type call struct {
	harmful  bool
	answer   string
	handed   bool // the event reached the daemon's channel or spool
	duration time.Duration
}

type sample struct {
	phase                          string
	rssKB, hwmKB, fds, kernelWatch int
	daemonWatches                  int
	healthBytes                    int64
	goneKept                       int
	// fdKinds counts the descriptors by what they are open on, sessions' names generalised, so
	// that descriptors held past the sessions they served show what holds them.
	fdKinds map[string]int
}

// fdKind is what a descriptor of the daemon's is open on: a kind (socket, pipe, inotify) or a
// path below the harness's folder, its numbers (which name the sessions) generalised.
var digitRuns = regexp.MustCompile(`[0-9]+`)

func (h *harness) fdKind(target string) string {
	rel, err := filepath.Rel(h.dir, target)
	if !strings.HasPrefix(target, "/") || err != nil || strings.HasPrefix(rel, "..") {
		kind, _, _ := strings.Cut(target, ":")
		return kind
	}
	return digitRuns.ReplaceAllString(filepath.ToSlash(rel), "#")
}

// fdGrowth says which kinds of descriptor after holds more of than before.
func fdGrowth(before, after sample) string {
	var out []string
	for kind, n := range after.fdKinds {
		if d := n - before.fdKinds[kind]; d > 0 {
			out = append(out, fmt.Sprintf("%s +%d", kind, d))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func (h *harness) path(p ...string) string { return filepath.Join(append([]string{h.dir}, p...)...) }

func (h *harness) start() error {
	cfg := `{"version":1,"cowork_enabled":true,"mode":"` + h.mode + `","log_level":"warn","heartbeat_interval":"1s",
"decision_timeout":"3s","hook_timeout":"10s","telemetry":{"max_file_mb":2048}}`
	if err := h.WriteConfig(cfg); err != nil {
		return err
	}
	start := h.Start
	if h.system {
		start = h.StartSystem
	}
	env := []string{"COWORKBRIDGE_SESSION_BUDGET=100000000"}
	if h.heapTo != "" {
		env = append(env, "COWORKBRIDGE_HEAPPROFILE="+filepath.Join(h.dir, "heap"))
	}
	d, err := start(h.bin, env...)
	h.d = d
	return err
}

func (h *harness) kill() error { return h.d.Restart() }

func (h *harness) stop() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return nil
	}
	h.stopped = true
	return h.d.Stop(30 * time.Second)
}

func (h *harness) pid() int { return h.d.PID() }

func (h *harness) soak(o options) error {
	type live struct {
		dir, hook string
		socket    bool // the call goes through the system daemon's socket
	}
	var ss []live
	for i := range o.sessions {
		dir, err := h.NewSession(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i))
		if err != nil {
			return err
		}
		ss = append(ss, live{dir: dir})
	}
	for i := range ss {
		c, err := h.WaitHooked(ss[i].dir, time.Minute)
		if err != nil {
			return err
		}
		if i%2 == 1 { // as the VM runs it: the host channel out of sight
			c = strings.ReplaceAll(c, "/channel/", "/not-in-the-vm/")
		}
		ss[i].hook = c
		ss[i].socket = h.system && i%3 == 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	var wg sync.WaitGroup
	for range o.callers {
		wg.Go(func() {
			for ctx.Err() == nil {
				s := ss[rand.IntN(len(ss))]
				h.call(s.dir, s.hook, s.socket)
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	wg.Go(func() {
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				h.sample("soak")
			}
		}
	})
	if o.bombMiB > 0 {
		wg.Go(func() { h.bomb(ctx, ss[0].dir, o.bombMiB) })
	}
	var killErr error
	if o.kills > 0 {
		every := o.duration / time.Duration(o.kills+1)
		for k := 0; k < o.kills && ctx.Err() == nil; k++ {
			select {
			case <-ctx.Done():
			case <-time.After(every/2 + rand.N(every/2)): // at most every: all K fit in the run
				if err := h.kill(); err != nil {
					killErr = err
					cancel()
				}
				h.kills++
			}
		}
	}
	<-ctx.Done()
	wg.Wait()
	fmt.Fprintf(os.Stderr, "soak: %d calls, %d SIGKILLs\n", h.seq.Load(), h.kills)
	return killErr
}

// bomb appends tool calls with 8 MiB inputs and no results to a transcript of the session in
// dir, one every half second, until mib MiB are written: what once starved the daemon.
func (h *harness) bomb(ctx context.Context, dir string, mib int) {
	projects := filepath.Join(dir, ".claude", "projects", "-sessions-soak")
	if err := os.MkdirAll(projects, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "bomb:", err)
		return
	}
	f, err := os.OpenFile(filepath.Join(projects, "0b0b0b0b-0000-4000-8000-000000000000.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bomb:", err)
		return
	}
	defer f.Close()
	huge := strings.Repeat("A", 8<<20)
	for i := 0; i < mib/8 && ctx.Err() == nil; i++ {
		fmt.Fprintf(f, `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_bomb_%d","name":"Write","input":{"file_path":"/tmp/x","content":%q}}]}}`+"\n", i, huge)
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	fmt.Fprintf(os.Stderr, "bomb: %d MiB written into %s\n", mib, projects)
}

var notRunning = "is not running on this Mac"

// daemonDown is what `coworkbridge-hook --system` answers when the daemon cannot be reached: the
// call is denied there, and its event never handed over.
var daemonDown = "daemon could not judge"

// call runs one hook with a harmless or a harmful command carrying a unique marker: the session's
// own hook, or (socket) the system drop-in's hook.
func (h *harness) call(dir, hook string, socket bool) {
	n := h.seq.Add(1)
	marker := fmt.Sprintf("soak-%09d", n)
	harmful := n%5 == 0
	command := "ls -la"
	if harmful {
		command = "rm -rf ~"
	}
	input, _ := json.Marshal(map[string]string{"command": command, "description": marker})
	payload, _ := json.Marshal(map[string]any{"session_id": "soak", "cwd": "/sessions/soak/mnt/outputs",
		"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": json.RawMessage(input)})
	var out []byte
	var took time.Duration
	if socket {
		out, took, _ = h.ExecHook(dir, []string{filepath.Join(filepath.Dir(h.bin), "coworkbridge-hook"), "--system"}, payload)
	} else {
		out, took, _ = h.CallHook(dir, hook, payload)
	}
	c := &call{harmful: harmful, answer: string(out), duration: took}
	c.handed = !strings.Contains(c.answer, notRunning) && !strings.Contains(c.answer, daemonDown)
	h.calls.Store(marker, c)
}

// churnSessions creates n sessions, each under its own account and org folders, batch at a
// time, waits until each is hooked, and deletes them.
func (h *harness) churnSessions(n int) error {
	const batch = 20
	started := time.Now()
	for i := 0; i < n; i += batch {
		var dirs []string
		for j := i; j < min(n, i+batch); j++ {
			dir, err := h.NewSessionIn(fmt.Sprintf("churn-acct%d", j), fmt.Sprintf("org%d", j), fmt.Sprintf("c%07d", j))
			if err != nil {
				return err
			}
			dirs = append(dirs, dir)
		}
		for _, d := range dirs {
			if _, err := h.WaitHooked(d, 30*time.Second); err != nil {
				return fmt.Errorf("churn: %w", err)
			}
		}
		for j := range dirs {
			if out, err := exec.Command("rm", "-rf", filepath.Join(h.Sessions, fmt.Sprintf("churn-acct%d", i+j))).CombinedOutput(); err != nil {
				return fmt.Errorf("churn: a deletion failed (undone under it?): %v %s", err, out)
			}
		}
	}
	fmt.Fprintf(os.Stderr, "churn: %d sessions created, hooked and deleted in %v\n", n, time.Since(started).Round(time.Second))
	return nil
}

// heapProfile asks the daemon for a heap profile (SIGUSR1 in a development build) and keeps it
// as <heapTo>.<phase>. In system mode it is the root daemon's: its workers are processes of
// their own.
func (h *harness) heapProfile(pid int, phase string) error {
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return fmt.Errorf("signal the daemon: %w", err)
	}
	to := h.heapTo + "." + strings.ReplaceAll(phase, " ", "-")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		written, _ := filepath.Glob(filepath.Join(h.dir, "heap.*[0-9]")) // never a .tmp
		if len(written) > 0 {
			if err := os.Rename(written[0], to); err != nil {
				return err
			}
			fmt.Fprintln(os.Stderr, "heap profile:", to)
			return nil
		}
	}
	return errors.New("none written within 10 s: was the daemon built with -tags coworkbridge_dev?")
}

func (h *harness) sample(phase string) {
	pid := h.pid()
	s := sample{phase: phase}
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				s.rssKB, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			}
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok { // the peak since the last restart
				s.hwmKB, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			}
		}
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	s.fds = len(fds)
	s.fdKinds = map[string]int{}
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil {
			s.fdKinds[h.fdKind(target)]++
		}
	}
	infos, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
	for _, p := range infos {
		data, _ := os.ReadFile(p)
		s.kernelWatch += bytes.Count(data, []byte("inotify wd:"))
	}
	if data, err := os.ReadFile(h.path("state", "health.json")); err == nil {
		s.healthBytes = int64(len(data))
		var snap struct {
			Daemon   struct{ Watches int }
			Sessions []struct {
				Gone time.Time `json:"gone"`
			}
		}
		if json.Unmarshal(data, &snap) == nil {
			s.daemonWatches = snap.Daemon.Watches
			for _, x := range snap.Sessions {
				if !x.Gone.IsZero() {
					s.goneKept++
				}
			}
		}
	}
	h.samples = append(h.samples, s)
	if h.heapTo != "" {
		if err := h.heapProfile(pid, phase); err != nil {
			fmt.Fprintln(os.Stderr, "heap profile:", err)
		}
	}
	fmt.Fprintf(os.Stderr, "%-11s rss %6.1f MB  fds %4d  inotify watches %5d (daemon's count %5d)  health.json %7d B, %d gone sessions kept\n",
		phase, float64(s.rssKB)/1024, s.fds, s.kernelWatch, s.daemonWatches, s.healthBytes, s.goneKept)
}

// check reads every decision log file and compares it with the calls made.
func (h *harness) check() error {
	byMarker := map[string]int{}
	byRID := map[string]int{}
	files, _ := filepath.Glob(h.path("logs", "decisions.jsonl*"))
	for _, f := range files {
		if err := readLog(f, byMarker, byRID); err != nil {
			return err
		}
	}
	var total, handed, lost, doubled, failOpen, downDenied int
	var slow time.Duration
	var took []time.Duration
	h.calls.Range(func(k, v any) bool {
		c := v.(*call)
		total++
		slow = max(slow, c.duration)
		if c.handed {
			took = append(took, c.duration)
		}
		if h.mode == "enforce" && c.harmful && !strings.Contains(c.answer, `"deny"`) {
			failOpen++
		}
		if !c.handed {
			downDenied++
			return true
		}
		handed++
		switch n := byMarker[k.(string)]; {
		case n == 0:
			lost++
		case n > 1:
			doubled++
		}
		return true
	})
	dupRIDs := 0
	for _, n := range byRID {
		if n > 1 {
			dupRIDs++
		}
	}
	fmt.Printf("SIGKILLs %d\n", h.kills)
	fmt.Printf("calls %d: handed over %d, denied at once while the daemon was down %d; slowest hook %v\n", total, handed, downDenied, slow.Round(time.Millisecond))
	fmt.Printf("lost %d, recorded more than once %d (records sharing a rid: %d), harmful calls let through %d\n", lost, doubled, dupRIDs, failOpen)
	slices.Sort(took)
	if len(took) > 0 {
		at := func(p float64) time.Duration { return took[int(float64(len(took)-1)*p)].Round(time.Microsecond) }
		fmt.Printf("hook round trip (calls handed over, %s mode): p50 %v, p99 %v\n", h.mode, at(0.5), at(0.99))
	}
	v, err := telemetry.Verify(telemetry.Files(h.path("logs", "decisions.jsonl")))
	if err != nil {
		return err
	}
	fmt.Printf("decision log chain: %d records linked, head %s", v.Records, v.Head)
	if v.Broken != nil {
		fmt.Printf(", BROKEN at %s", v.Broken)
	}
	fmt.Println()
	if len(h.samples) > 0 {
		fmt.Println("phase        RSS MB   fds  inotify(kernel)  watches(daemon)  health.json B  gone kept")
		for _, s := range h.samples {
			if s.phase == "soak" {
				continue
			}
			fmt.Printf("%-11s %7.1f %5d %16d %16d %14d %10d\n", s.phase, float64(s.rssKB)/1024, s.fds, s.kernelWatch, s.daemonWatches, s.healthBytes, s.goneKept)
		}
		peak, hwm := 0, 0
		for _, s := range h.samples {
			peak, hwm = max(peak, s.rssKB), max(hwm, s.hwmKB)
		}
		fmt.Printf("peak RSS seen %.1f MB; highest peak the kernel recorded (VmHWM, reset by each restart) %.1f MB\n", float64(peak)/1024, float64(hwm)/1024)
		// The churn's own: what the last sample holds that the one before it (the soak's end,
		// or the start) did not.
		var phases []sample
		for _, s := range h.samples {
			if s.phase != "soak" {
				phases = append(phases, s)
			}
		}
		if n := len(phases); n >= 2 {
			if g := fdGrowth(phases[n-2], phases[n-1]); g != "" {
				fmt.Printf("descriptors held %s that %s did not: %s\n", phases[n-1].phase, phases[n-2].phase, g)
			}
		}
	}
	if lost+doubled+failOpen > 0 || v.Broken != nil {
		return fmt.Errorf("%d lost, %d doubled, %d let through, chain broken: %v", lost, doubled, failOpen, v.Broken != nil)
	}
	return nil
}

func readLog(path string, byMarker, byRID map[string]int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r struct {
			RID   string          `json:"rid"`
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			return fmt.Errorf("%s: a line that is not one record: %.100q", path, sc.Bytes())
		}
		var in struct {
			Description string `json:"description"`
		}
		json.Unmarshal(r.Input, &in)
		if strings.HasPrefix(in.Description, "soak-") {
			byMarker[in.Description]++
			byRID[r.RID]++
		}
	}
	return sc.Err()
}
