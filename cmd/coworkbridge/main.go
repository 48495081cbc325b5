// Command coworkbridge puts Claude Cowork sessions on a Mac under an organisation's policy.
//
// It runs as a per-user LaunchAgent (`coworkbridge run`). The subcommands are listed by
// `coworkbridge help`. This package is the binary's flags, output and wiring; the work itself
// is done by the packages it imports, not here.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/buildinfo"
)

// version is set at release time with -ldflags "-X main.version=v1.2.3".
var version = ""

// stdio is a command's standard streams, passed in so tests can capture them.
type stdio struct {
	in       io.Reader
	out, err io.Writer
	// devOverrides: the host hook may honour the COWORKBRIDGE_* overrides (a development
	// build, or the tests' own binary).
	devOverrides bool
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, sio stdio) int
}

func commands() []command {
	return []command{
		{"run", "run the daemon (what the LaunchAgent starts)", cmdRun},
		{"demo", "show the daemon at work on two temporary sessions (needs only /bin/sh)", cmdDemo},
		{"hook", "a Claude Code PreToolUse hook for sessions on this Mac (reads the payload on stdin)", cmdHook},
		{"install", "install the per-user agent (LaunchAgent on macOS, systemd user unit on Linux)", cmdInstall},
		{"uninstall", "remove our hooks from every session, then the agent (logs kept unless --purge)", cmdUninstall},
		{"unhook", "remove our hooks from every session of this user (the daemon must be stopped)", cmdUnhook},
		{"status", "say whether the daemon runs and guards every session (exit 0/1/2/3)", cmdStatus},
		{"check", "classify one tool call, or score the classifier on a labelled corpus", cmdCheck},
		{"validate", "check a managed.json or a configuration profile and its whole policy, listing every problem (exit 0/1)", cmdValidate},
		{"rules", "list every rule of the policy in force (id, verdict, mode, source), or explain one", cmdRules},
		{"console-settings", "print the Claude Code settings that carry coworkbridge's hook in the Claude.ai admin console", cmdConsoleSettings},
		{"report", "summarise decision logs for a rollout (tables, --json, or --html with charts)", cmdReport},
		{"version", "print the version", cmdVersion},
		{"help", "list the commands", cmdHelp},
	}
}

func main() {
	os.Exit(dispatch(context.Background(), os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr, devBuild}))
}

// Exit statuses shared by the subcommands.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 64 // EX_USAGE: distinct from every command's own statuses (status uses 1 to 3)
)

func dispatch(ctx context.Context, args []string, sio stdio) int {
	if len(args) == 0 {
		cmdHelp(ctx, nil, sio)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "--help", "-help":
		name = "help"
	case "--version", "-version", "-v":
		name = "version"
	}
	i := slices.IndexFunc(commands(), func(c command) bool { return c.name == name })
	if i < 0 {
		fmt.Fprintf(sio.err, "coworkbridge: unknown command %q; run 'coworkbridge help' for the list\n", args[0])
		return exitUsage
	}
	return commands()[i].run(ctx, args[1:], sio)
}

func cmdHelp(ctx context.Context, args []string, sio stdio) int {
	if len(args) > 0 && args[0] != "-h" && args[0] != "--help" {
		// help COMMAND is COMMAND -h.
		if slices.ContainsFunc(commands(), func(c command) bool { return c.name == args[0] && c.name != "help" }) {
			return dispatch(ctx, []string{args[0], "-h"}, sio)
		}
		fmt.Fprintf(sio.err, "coworkbridge help: unknown command %q\n", args[0])
		return exitUsage
	}
	var b strings.Builder
	b.WriteString("coworkbridge puts Claude Cowork sessions under your organisation's policy.\n\nUsage: coworkbridge <command> [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'coworkbridge <command> -h' for a command's flags.\n")
	fmt.Fprint(sio.out, b.String())
	return exitOK
}

func cmdVersion(_ context.Context, args []string, sio stdio) int {
	fs := newFlags("version", "", "Prints the version of this coworkbridge binary.", sio)
	if code, done := fs.parse(args); done {
		return code
	}
	if code, done := fs.noArgs(); done {
		return code
	}
	fmt.Fprintf(sio.out, "coworkbridge %s\n", versionString())
	return exitOK
}

// versionString is this build's: the release stamp, or what Go recorded.
func versionString() string { return buildinfo.Version(version) }
