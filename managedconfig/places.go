package managedconfig

import (
	"path/filepath"
	"slices"
)

// AgentLabel names coworkbridge's LaunchAgent (and its systemd unit elsewhere).
const AgentLabel = "com.coworkbridge.agent"

// DaemonLabel names system mode's LaunchDaemon (and its systemd system unit elsewhere).
const DaemonLabel = "com.coworkbridge.daemon"

// Owners of the places on the Mac the policy protects files by.
const (
	// OwnerGuard is coworkbridge itself: its state and host channels, logs, binary, LaunchAgent,
	// managed configuration and profile. An agent reads none of it (the decision log shows
	// other sessions' calls) and writes none of it (a forged record, a cleared quarantine).
	OwnerGuard = "coworkbridge"
	// OwnerSessions is every Cowork session's folder; a call may reach its own session's, never
	// another's (a planted transcript, another session's memory or instructions).
	OwnerSessions = "cowork-sessions"
	// OwnerApp is the Claude app's and Claude Code's own configuration and data outside the
	// sessions: read, but never written (a hook in ~/.claude/settings.json outlives the session).
	OwnerApp = "claude-app"
	// OwnerManaged is Claude Code's managed settings, where coworkbridge's lockdown lives.
	OwnerManaged = "claude-managed-settings"
)

// A Place is a location on the Mac and who owns it. Stem: every name that begins with Path is
// the place too (a log and its rotated files).
type Place struct {
	Path  string
	Owner string
	What  string
	Stem  bool
}

// places maps the Mac for the policy from what the configuration and the platform say.
func places(env Env, paths Paths, cfg Config) []Place {
	home := func(elem ...string) string { return filepath.Join(append([]string{env.Home}, elem...)...) }
	out := []Place{
		{Path: paths.StateDir, Owner: OwnerGuard, What: "coworkbridge's state and host channels"},
		{Path: paths.LogDir, Owner: OwnerGuard, What: "coworkbridge's logs"},
		{Path: cfg.Telemetry.Path, Owner: OwnerGuard, What: "coworkbridge's decision log", Stem: true},
	}
	for _, c := range env.ConfigCandidates() {
		out = append(out, Place{Path: c, Owner: OwnerGuard, What: "coworkbridge's managed configuration"})
	}
	if env.Executable != "" {
		// Whichever of our programs runs (a hook program judges with this map too), the others
		// beside it are protected alike.
		exes := []string{env.Executable}
		if slices.Contains(programs(), filepath.Base(env.Executable)) {
			exes = exes[:0]
			for _, name := range programs() {
				exes = append(exes, filepath.Join(filepath.Dir(env.Executable), name))
			}
		}
		for _, exe := range exes {
			out = append(out, Place{Path: exe, Owner: OwnerGuard, What: "coworkbridge's program"})
		}
	}
	if env.GOOS == "darwin" {
		out = append(out,
			Place{Path: "/Library/Application Support/CoworkBridge", Owner: OwnerGuard, What: "coworkbridge's managed configuration"},
			Place{Path: home("Library", "LaunchAgents", AgentLabel+".plist"), Owner: OwnerGuard, What: "coworkbridge's LaunchAgent"},
			Place{Path: "/Library/LaunchAgents/" + AgentLabel + ".plist", Owner: OwnerGuard, What: "coworkbridge's LaunchAgent"},
			Place{Path: "/Library/LaunchDaemons/" + DaemonLabel + ".plist", Owner: OwnerGuard, What: "coworkbridge's LaunchDaemon (system mode)"},
			Place{Path: "/Library/Application Support/ClaudeCode", Owner: OwnerManaged, What: "Claude Code's managed settings"},
			Place{Path: home("Library", "Application Support", "Claude"), Owner: OwnerApp, What: "the Claude app's data"},
			Place{Path: home("Library", "Application Support", "Claude-3p"), Owner: OwnerApp, What: "the Claude app's data"},
			Place{Path: home("Library", "Logs", "Claude"), Owner: OwnerApp, What: "the Claude app's logs"},
		)
	} else {
		out = append(out,
			Place{Path: home(".config", "systemd", "user", AgentLabel+".service"), Owner: OwnerGuard, What: "coworkbridge's user service"},
			Place{Path: "/etc/systemd/system/" + DaemonLabel + ".service", Owner: OwnerGuard, What: "coworkbridge's system service (system mode)"},
			Place{Path: "/etc/claude-code", Owner: OwnerManaged, What: "Claude Code's managed settings"},
		)
	}
	// Of ~/.claude, what configures Claude Code run outside Cowork: its transcripts and caches
	// are the user's tools' to write.
	out = append(out, Place{Path: home(".claude.json"), Owner: OwnerApp, What: "Claude Code's user configuration", Stem: true},
		Place{Path: home(".claude", "settings"), Owner: OwnerApp, What: "Claude Code's user settings", Stem: true})
	for _, name := range []string{"CLAUDE.md", "hooks", "commands", "agents", "skills", "plugins", "rules", "output-styles"} {
		out = append(out, Place{Path: home(".claude", name), Owner: OwnerApp, What: "Claude Code's user configuration"})
	}
	// The program a local install runs: replaced, it is every later session's CLI.
	out = append(out, Place{Path: home(".claude", "local"), Owner: OwnerApp, What: "Claude Code's own program"})
	for _, r := range cfg.SessionsRoots {
		out = append(out, Place{Path: r, Owner: OwnerSessions, What: "Cowork's sessions"})
	}
	return slices.DeleteFunc(out, func(p Place) bool { return p.Path == "" || !filepath.IsAbs(p.Path) })
}
