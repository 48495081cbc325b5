package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/coworkbridge/coworkbridge/installer"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

func cmdInstall(_ context.Context, args []string, sio stdio) int { return installCmd(args, sio, true) }
func cmdUninstall(_ context.Context, args []string, sio stdio) int {
	return installCmd(args, sio, false)
}

func installCmd(args []string, sio stdio, install bool) int {
	name := map[bool]string{true: "install", false: "uninstall"}[install]
	about := "Installs the per-user agent (a LaunchAgent on macOS, a systemd user unit on Linux) and starts it."
	if !install {
		about = "Removes coworkbridge's hooks from every session of the user first (so that no enforce hook is left\n" +
			"to deny every call), then stops and removes the agent. Logs and state are kept unless --purge."
	}
	if install {
		about += "\nWith --system (root; the MDM package's post-install): system mode instead, a root daemon for every\n" +
			"user (a LaunchDaemon; a systemd system unit on Linux) and the drop-in whose hook talks to it."
	} else {
		about += "\nWith --system (root): removes system mode instead: the root daemon, its drop-in, and our hooks from\n" +
			"every user's sessions (as each user); with --purge also its logs and state, and each user's worker state."
	}
	fs := newFlags(name, "[--dry-run] [--system | --system-wide [--user NAME]...] [--managed-settings] [--binary PATH]"+map[bool]string{true: "", false: " [--purge]"}[install], about, sio)
	system := fs.Bool("system", false, "system mode: the root daemon serving every user, and its drop-in (needs root)")
	dry := fs.Bool("dry-run", false, "print the files and commands instead of acting")
	systemWide := fs.Bool("system-wide", false, "as root (an MDM post-install script): act for the console user, or each --user")
	var users stringList
	fs.Var(&users, "user", "with --system-wide: a user to act for (repeatable); default: the console user")
	managed := fs.Bool("managed-settings", false, "also "+map[bool]string{true: "write", false: "remove"}[install]+
		" the Claude Code managed-settings drop-in that runs 'coworkbridge hook' for sessions on this Mac (needs root)")
	binary := fs.String("binary", "", "the installed coworkbridge binary the agent runs (default: this one)")
	var purge *bool
	if !install {
		purge = fs.Bool("purge", false, "also remove logs and state")
	} else {
		purge = new(bool)
	}
	if code, done := fs.parse(args); done {
		return code
	}
	if code, done := fs.noArgs(); done {
		return code
	}
	in, err := installer.New(*binary, sio.out, *dry)
	if err != nil {
		fmt.Fprintf(sio.err, "coworkbridge %s: %v\n", name, err)
		return exitFail
	}
	if *system {
		if *systemWide || len(users) > 0 {
			fmt.Fprintf(sio.err, "coworkbridge %s: --system serves every user; it takes no --system-wide or --user\n", name)
			return exitUsage
		}
		return installSystem(in, install, *purge, name, sio)
	}
	// The drop-in is machine-wide: a Mac with nobody at the console (pre-staged at the login
	// window) still gets it, and the per-user part is reported as deferred.
	targets, err := in.Targets(*systemWide, users)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, t := range targets {
		if install {
			errs = append(errs, in.Install(t))
		} else {
			errs = append(errs, in.Uninstall(t, *purge))
		}
	}
	if *managed {
		if install {
			cfg, err := dropInConfig(sio)
			if err == nil {
				err = in.WriteDropIn(cfg)
			}
			errs = append(errs, err)
		} else {
			errs = append(errs, in.RemoveDropIn())
		}
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(sio.err, "coworkbridge %s: %v\n", name, err)
		return exitFail
	}
	return exitOK
}

// dropInConfig is the configuration the drop-in is written for: managed.json as the machine has
// it. An invalid file gets the drop-in without lockdown (the host hook itself then fails closed
// when the file asks for enforce), and a warning that says so.
func dropInConfig(sio stdio) (managedconfig.Config, error) {
	snap, err := machineConfig()
	if err != nil {
		return managedconfig.Config{}, err
	}
	if snap.Origin == managedconfig.OriginInvalid {
		fmt.Fprintf(sio.err, "coworkbridge install: warning: %s; the drop-in is written without lockdown until the file is fixed and install is run again\n", snap.Problem)
	}
	return snap.Config, nil
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func cmdUnhook(_ context.Context, args []string, sio stdio) int {
	fs := newFlags("unhook", "[--quiet-count] [--purge-worker-state]", "Removes coworkbridge's hooks from every Cowork session of this user, as uninstall does right\n"+
		"after it stops the agent. The daemon puts them back while it runs, so stop it first.", sio)
	quiet := fs.Bool("quiet-count", false, "print only the number of sessions changed (for uninstall run as root)")
	purgeWorker := fs.Bool("purge-worker-state", false, "also remove this user's system-mode worker state (for uninstall --system --purge, run as root)")
	if code, done := fs.parse(args); done {
		return code
	}
	if code, done := fs.noArgs(); done {
		return code
	}
	var n int
	env, err := managedconfig.SystemEnv()
	if err == nil {
		n, err = installer.Unhook(env)
	}
	if err == nil && *purgeWorker {
		var dir string
		if dir, err = managedconfig.WorkerStateDir(env.GOOS, env.Home); err == nil {
			err = os.RemoveAll(dir)
		}
	}
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge unhook:", err)
		return exitFail
	}
	if *quiet {
		fmt.Fprintln(sio.out, n)
	} else {
		fmt.Fprintf(sio.out, "coworkbridge's hooks removed from %d session(s)\n", n)
	}
	return exitOK
}

// installSystem installs or removes system mode.
func installSystem(in *installer.Installer, install, purge bool, name string, sio stdio) int {
	var err error
	if install {
		var cfg managedconfig.Config
		if cfg, err = dropInConfig(sio); err == nil {
			err = in.InstallSystem(cfg)
		}
	} else {
		err = in.UninstallSystem(purge)
	}
	if err != nil {
		fmt.Fprintf(sio.err, "coworkbridge %s --system: %v\n", name, err)
		return exitFail
	}
	return exitOK
}
