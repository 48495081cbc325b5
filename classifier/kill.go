package classifier

import (
	"regexp"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
	"github.com/coworkbridge/coworkbridge/internal/lazy"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

// Stopping processes by name: pkill, killall, skill and slay choose their victims by a name or
// a pattern, so what they stop is whatever the pattern matches. The pattern is tried against the
// names and command lines of the processes a session must never stop; one that matches any of
// them (or cannot be read as a pattern, or selects by user, group, session or terminal) is a
// block, any other stops the agent's own work (pkill -f "next dev").

// protectedProcesses are names and command lines of processes a session must never stop: the
// guard and the agent, the shells and terminals they run in, the user's browsers (stopped to be
// started again with remote debugging), the system's own, and security and management tools.
var protectedProcesses = []string{
	// coworkbridge's programs, by name (and as the kernel truncates a name to 16 bytes) and by
	// the command lines a package's LaunchAgent, LaunchDaemon, workers and drop-ins start.
	"coworkbridge", "coworkbridge-hook", "coworkbridge-hoo", "coworkbridge-userhook", "coworkbridge-use",
	"/Library/Application Support/CoworkBridge/bin/coworkbridge run",
	"/Library/Application Support/CoworkBridge/bin/coworkbridge run --system",
	"/Library/Application Support/CoworkBridge/bin/coworkbridge run --worker",
	"/Library/Application Support/CoworkBridge/bin/coworkbridge hook --system",
	"/Library/Application Support/CoworkBridge/bin/coworkbridge-hook --system",
	"/Library/Application Support/CoworkBridge/bin/coworkbridge-userhook --per-user",
	"/usr/local/bin/coworkbridge daemon", "/bin/sh -c coworkbridge hook", "/bin/sh -c exec /usr/local/bin/coworkbridge hook # coworkbridge-hook v2 enforce",
	"claude", "Claude", "/Applications/Claude.app/Contents/MacOS/Claude", "node /usr/local/bin/claude", "node",
	"sh", "bash", "zsh", "login", "Terminal", "iTerm2", "tmux", "screen",
	"launchd", "cron", "syslogd", "auditd", "logd", "loginwindow", "WindowServer", "securityd", "opendirectoryd",
	"mds", "sshd", "Finder", "Dock", "SystemUIServer", "systemd", "rsyslogd", "journald", "init",
	"Google Chrome", "Safari", "com.apple.Safari", "firefox", "Microsoft Edge", "Brave Browser", "Arc", "chromium",
	"osqueryd", "Little Snitch", "LuLu", "falcond", "com.crowdstrike.falcon.Agent", "ESET", "esensor", "nessusd",
	"santad", "jamf", "JamfDaemon", "SentinelAgent", "XProtect", "mdmclient", "BlockBlock", "wdavdaemon",
	"Microsoft Defender", "endpointsecurityd", "Elastic Agent", "velociraptor", "wazuh-agentd", "ossec",
}

// killerSelectors are the options that choose processes by owner, group, session or terminal
// rather than by name: every process of a user is the guard's and the agent's too.
var killerSelectors = lazy.Value[map[string][]string]{Make: func() map[string][]string {
	return map[string][]string{
		"pkill":   {"-u", "-U", "-g", "-G", "-s", "-t", "--euid", "--uid", "--pgroup", "--group", "--session", "--terminal", "-v", "--inverse"},
		"killall": {"-u", "--user", "-g", "--process-group", "-t"},
		"skill":   {"-u", "-t", "--user", "--tty"},
		"slay":    {"*"},
	}
}}

// killerValues are the options of these programs that take a value (a signal, a pid file, a
// parent), skipped when looking for the pattern.
var killerValues = []string{"-s", "--signal", "-F", "--pidfile", "-P", "--parent", "-n", "--ns", "--nslist", "-c", "--context"}

// runTimeValue is an expansion the analysis could not compute: a variable or a substitution.
var runTimeValue = lazyregexp.New(`\$[({A-Za-z_]`)

// killProtected finds a process stop by name that could reach a protected process.
func killProtected(_ *Classifier, it item) (string, bool) {
	cmd := it.cmd
	if cmd == nil || killerSelectors.Get()[cmd.Name] == nil {
		return "", false
	}
	fullLine := cmd.Name == "pkill" && slices.ContainsFunc(cmd.Args, func(a string) bool {
		return a == "-f" || a == "--full" || facts.IsFlagCluster(a) && strings.Contains(a, "f")
	})
	var patterns []string
	for i := 0; i < len(cmd.Args); i++ {
		a := cmd.Args[i]
		switch {
		case slices.Contains(killerSelectors.Get()[cmd.Name], "*"), slices.Contains(killerSelectors.Get()[cmd.Name], a):
			return cmd.Line(), true
		case slices.Contains(killerValues, a):
			i++
		case a == "--": // the end of options: what follows are patterns, dashes and all
			patterns = append(patterns, cmd.Args[i+1:]...)
			i = len(cmd.Args)
		case strings.HasPrefix(a, "-"):
		default:
			patterns = append(patterns, a)
		}
	}
	if len(patterns) == 0 {
		return "", false // no pattern: the program only complains
	}
	for _, p := range patterns {
		if matchesProtected(p, fullLine || cmd.Name != "killall") {
			return cmd.Line(), true
		}
	}
	return "", false
}

// matchesProtected reports whether a pattern could select a protected process: as a regular
// expression (pkill), or an exact name (killall), case folded either way since the programs
// can be told to fold. A pattern that does not compile, or is only known at run time, could be
// anything.
func matchesProtected(pattern string, regex bool) bool {
	if pattern == "" || runTimeValue.MatchString(pattern) {
		return true
	}
	if !regex {
		return slices.ContainsFunc(protectedProcesses, func(p string) bool { return strings.EqualFold(p, pattern) })
	}
	re, err := regexp.Compile("(?i)" + pattern)
	if err != nil {
		return true
	}
	return slices.ContainsFunc(protectedProcesses, re.MatchString)
}
