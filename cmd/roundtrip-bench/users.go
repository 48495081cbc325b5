package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/machine"
)

// benchUser makes a throw-away user whose home is under dir, for system mode's sessions.
func benchUser(dir, prefix string) (*machine.Owner, func(), error) {
	return machine.MakeUser(dir, fmt.Sprintf("%s%d", prefix, os.Getpid()%100000))
}

// children are the processes whose parent is pid (a system daemon's workers).
func children(pid int) []int {
	var out []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(data, ')')
		if i < 0 || i+2 >= len(data) {
			continue
		}
		f := strings.Fields(string(data[i+2:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			out = append(out, child)
		}
	}
	return out
}

// childrenCPU is the CPU time so far of pid's children.
func childrenCPU(pid int) time.Duration {
	var total time.Duration
	for _, c := range children(pid) {
		total += procCPU(c)
	}
	return total
}

// childrenRSS is the resident memory of pid's children now, in bytes.
func childrenRSS(pid int) int64 {
	var total int64
	for _, c := range children(pid) {
		total += procRSS(c)
	}
	return total
}

// procRSS is a process's resident memory now (VmRSS), in bytes.
func procRSS(pid int) int64 { return procField(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:") }

// procPSS is a process's proportional share of resident memory (Pss): the pages it shares with
// other processes (a binary's text, mapped by every worker) counted once among them, in bytes.
func procPSS(pid int) int64 { return procField(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:") }

func procField(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == key {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// buildDaemon builds coworkbridge into dir, as releases are built, unless bin names one.
func buildDaemon(dir, bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	bin = filepath.Join(dir, "coworkbridge")
	build := exec.Command("go", "build", "-o", bin, "./cmd/coworkbridge")
	build.Env, build.Stderr = append(os.Environ(), "CGO_ENABLED=0"), os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build coworkbridge (run from the module root, or pass -bin): %w", err)
	}
	return bin, nil
}

// measureUsers runs a system daemon serving n throw-away users, each with one live session, and
// reports its resident memory and its workers' once every session is hooked and the daemon idle.
func measureUsers(bin string, n int) error {
	tmp, err := os.MkdirTemp("", "roundtrip-bench-users-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if bin, err = buildDaemon(tmp, bin); err != nil {
		return err
	}
	if _, err := os.Lstat(systemSocket()); err == nil {
		return fmt.Errorf("%s exists: a system daemon may be running here; stop it to measure", systemSocket())
	}
	defer os.RemoveAll(filepath.Dir(systemSocket()))
	m, err := machine.New(filepath.Join(tmp, "machine"))
	if err != nil {
		return err
	}
	var roots []string
	for i := range n {
		o, cleanup, err := benchUser(tmp, fmt.Sprintf("cbu%d-", i))
		if err != nil {
			return err
		}
		defer cleanup()
		um, err := machine.NewOwned(filepath.Join(tmp, fmt.Sprintf("u%d", i)), o)
		if err != nil {
			return err
		}
		s, err := um.NewSession(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i))
		if err != nil {
			return err
		}
		roots = append(roots, filepath.Dir(filepath.Dir(filepath.Dir(s))))
	}
	quoted := make([]string, len(roots))
	for i, r := range roots {
		quoted[i] = strconv.Quote(r)
	}
	if err := m.WriteConfig(`{"version":1,"cowork_enabled":true,"mode":"enforce","log_level":"warn","sessions_roots":[` + strings.Join(quoted, ",") + `]}`); err != nil {
		return err
	}
	d, err := m.StartSystem(bin, "COWORKBRIDGE_SESSIONS_ROOT=")
	if err != nil {
		return err
	}
	dd := daemon{d}
	defer dd.stop()
	deadline := time.Now().Add(60 * time.Second)
	for len(children(d.PID())) < n && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	dd.settle(30 * time.Second)
	ws := children(d.PID())
	var pss int64
	for _, w := range ws {
		pss += procPSS(w)
	}
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	fmt.Printf("system mode, %d users (one live session each): daemon RSS %.1f MB (PSS %.1f); %d workers, RSS %.1f MB together (%.1f each), PSS %.1f MB together (%.1f each)\n",
		n, mb(procRSS(d.PID())), mb(procPSS(d.PID())), len(ws), mb(childrenRSS(d.PID())), mb(childrenRSS(d.PID()))/float64(max(len(ws), 1)),
		mb(pss), mb(pss)/float64(max(len(ws), 1)))
	return nil
}
