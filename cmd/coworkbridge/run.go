package main

import (
	"context"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/coworkbridge/coworkbridge/daemon"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

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
	env, err := managedconfig.SystemEnv()
	var d *daemon.Daemon
	if err == nil {
		d, err = daemon.New(env, daemon.Options{Logger: log, Level: level, Version: versionString()})
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
