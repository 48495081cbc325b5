package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/coworkbridge/coworkbridge/daemon"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/privsep"
)

func cmdRun(ctx context.Context, args []string, sio stdio) int {
	fs := newFlags("run", "", "Runs the daemon until SIGTERM or SIGINT (what the LaunchAgent starts). It reads managed.json\n"+
		"from $"+managedconfig.EnvManagedConfig+" (development), else the system location, and idles while\n"+
		"cowork_enabled is false. With --system (what the LaunchDaemon starts, as root) it serves every user of\n"+
		"the Mac: root's folders for its record and state, and a socket for the host hooks.", sio)
	system := fs.Bool("system", false, "system mode: run as root for every user (see deploy/README.md)")
	worker := fs.Bool("worker", false, "a user's worker in system mode: started by the root daemon, as the user, never by hand")
	if code, done := fs.parse(args); done {
		return code
	}
	if code, done := fs.noArgs(); done {
		return code
	}
	oneProc()
	level := new(slog.LevelVar)
	log := newLogger(sio.err, level)
	if *worker {
		return runWorker(ctx, log)
	}
	env, err := managedconfig.SystemEnv()
	if err == nil && *system {
		env, err = systemEnv(env)
	}
	var d *daemon.Daemon
	if err == nil {
		d, err = daemon.New(env, daemon.Options{Logger: log, Level: level, Version: versionString(), WorkerEnv: workerEnv()})
	}
	if err != nil {
		log.Error("coworkbridge cannot start", "err", err)
		return exitFail
	}
	defer d.Close()
	defer startProfile(log)()

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := d.Run(ctx); err != nil {
		log.Error("coworkbridge stopped on an error", "err", err)
		return exitFail
	}
	return exitOK
}

// oneProc runs the daemon's Go code on one processor unless GOMAXPROCS says otherwise. The daemon
// waits on files nearly all the time and its work per event is a few hundred microseconds, so a
// second processor buys no throughput; what it costs is that every wake-up also wakes an idle
// thread to look for work it never finds. Measured with cmd/roundtrip-bench (100 sessions, 2
// cores): about a third less daemon CPU per event, and no slower round trips with 8 callers.
// Blocking system calls still run beside the Go code: the runtime hands the processor on.
func oneProc() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}

// systemEnv is env for system mode: root only, serving the homes of the Mac's users.
func systemEnv(env managedconfig.Env) (managedconfig.Env, error) {
	if os.Geteuid() != 0 {
		return env, errors.New("run --system must run as root (it is the LaunchDaemon's command); without admin rights use the per-user agent: coworkbridge install")
	}
	env.System, env.Homes = true, managedconfig.UserHomes(env.GOOS)
	return env, nil
}

// workerLink is the descriptor a worker's socket pair to root is inherited on.
const workerLink = 3

// runWorker is a user's worker of system mode: it talks only to the root daemon that started it,
// over the socket pair on descriptor 3, and stops when root closes it or on SIGTERM.
func runWorker(ctx context.Context, log *slog.Logger) int {
	f := os.NewFile(workerLink, "root-link")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		log.Error("run --worker is started by the system daemon, with its link on descriptor 3; it is not for running by hand", "err", err)
		return exitUsage
	}
	home, err := os.UserHomeDir()
	if err != nil {
		log.Error("a worker needs its user's home folder (HOME)", "err", err)
		return exitFail
	}
	defer startWorkerProfile(log)()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := privsep.Work(ctx, conn, privsep.WorkerOptions{Home: home, GOOS: runtime.GOOS, Stderr: log}); err != nil {
		log.Error("the worker stopped on an error", "err", err)
		return exitFail
	}
	return exitOK
}
