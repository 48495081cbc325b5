// Package installer installs and removes coworkbridge's per-user agent: the LaunchAgent on macOS or
// the systemd user unit on Linux, started through the service manager's own verbs, and the Claude
// Code managed-settings drop-in that runs the host hook. Removal takes our hooks out of every
// session of the user right after the agent stops.
//
// It does not parse flags or decide whom to act for beyond the console user and named users; it
// never runs the daemon itself, and never touches a session except to remove our hooks.
package installer

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/google/renameio/v2"

	"github.com/coworkbridge/coworkbridge/daemon"
	"github.com/coworkbridge/coworkbridge/dropin"
	"github.com/coworkbridge/coworkbridge/injector"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/settingsschema"
)

// Label names the LaunchAgent and the systemd user unit.
const Label = managedconfig.AgentLabel

// runner runs the service manager's commands; tests replace it.
type runner interface {
	run(name string, args ...string) (string, error)
}

type execRunner struct{}

func (execRunner) run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// Target is one user to act for.
type Target struct {
	Name     string
	UID, GID int
	Home     string
}

// Installer installs or removes the per-user agent. Every path and command is a field so that
// tests run it for a Mac on any machine.
type Installer struct {
	goos       string
	exe        string // absolute path of the binary the agent runs
	managedDir string // the managed-settings.d folder
	run        runner
	out        io.Writer
	dryRun     bool
	chown      bool // running as root for another user: files must belong to that user
	// system: system mode (InstallSystem): the drop-in's hook talks to the root daemon.
	system bool
	// systemUnitDir is where the LaunchDaemon's plist (macOS) or the system unit (Linux) goes.
	systemUnitDir string
	// unhook removes our hooks from every session of a user and returns how many it changed;
	// nil: unhookSessions.
	unhook func(t Target) (int, error)
	// systemdRuns reports whether systemd is this Linux machine's init (nil: sd_booted's test,
	// /run/systemd/system exists).
	systemdRuns func() bool
}

// New is an installer for this machine running binary (this one when "") that reports to out;
// dryRun prints the files and commands instead of acting.
func New(binary string, out io.Writer, dryRun bool) (*Installer, error) {
	named := binary != ""
	if !named {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find this binary: %w", err)
		}
		if exe, err = filepath.EvalSymlinks(exe); err != nil {
			return nil, fmt.Errorf("find this binary: %w", err)
		}
		binary = exe
	}
	if err := checkBinary(binary, named, dryRun, out); err != nil {
		return nil, err
	}
	if runtime.GOOS != "darwin" && runtime.GOOS != "linux" {
		return nil, fmt.Errorf("install supports macOS (LaunchAgent) and Linux (systemd user unit), not %s", runtime.GOOS)
	}
	return &Installer{goos: runtime.GOOS, exe: binary, managedDir: dropin.Dir(runtime.GOOS), run: execRunner{}, out: out, dryRun: dryRun,
		systemUnitDir: systemUnitDir(runtime.GOOS)}, nil
}

// checkBinary refuses a binary the agent could not start later: a relative path, a build go run
// or go test makes (deleted when it exits), one in the temporary folder (emptied at restart;
// only warned about in a dry run), or, unless this is a dry run, a file that is not there.
func checkBinary(binary string, named, dryRun bool, out io.Writer) error {
	if !filepath.IsAbs(binary) {
		return fmt.Errorf("--binary %q must be an absolute path: the agent starts it from anywhere", binary)
	}
	what := "this binary"
	if named {
		what = "--binary"
	}
	const build = "Build one where it stays (go build -o /usr/local/bin/coworkbridge ./cmd/coworkbridge) and run its install, or name the installed one with --binary"
	switch temporaryBuild(binary) {
	case goBuild:
		return fmt.Errorf("%s is %s, a temporary build that go run deletes when it exits: the agent would start a binary that is gone. %s", what, binary, build)
	case tempFolder:
		if !dryRun {
			return fmt.Errorf("%s is %s, in the temporary folder, which the system empties (at restart, or of files left alone for days): the agent would one day start a binary that is gone. %s", what, binary, build)
		}
		fmt.Fprintf(out, "warning: %s is in the temporary folder, which the system empties; install it where it stays before a real install\n", binary)
	}
	fi, err := os.Stat(binary)
	switch {
	case err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0:
		return nil
	case dryRun:
		fmt.Fprintf(out, "warning: %s is not an executable file here; the agent will fail to start until it is\n", binary)
		return nil
	case err != nil:
		return fmt.Errorf("the binary %s: %w (name the installed coworkbridge with --binary)", binary, err)
	}
	return fmt.Errorf("the binary %s is not an executable file (name the installed coworkbridge with --binary)", binary)
}

// Where a binary stands that the agent could not rely on finding later.
const (
	lasting    = iota
	goBuild    // a go-build folder: go run and go test delete it when they exit
	tempFolder // the temporary folder: emptied by the system
)

// temporaryBuild says whether path is in a folder go run or go test builds into, or anywhere
// under the temporary folder.
func temporaryBuild(path string) int {
	for _, part := range strings.Split(filepath.ToSlash(path), "/") {
		if strings.HasPrefix(part, "go-build") {
			return goBuild
		}
	}
	tmp, err := filepath.EvalSymlinks(os.TempDir())
	if err == nil && strings.HasPrefix(path, tmp+string(filepath.Separator)) {
		return tempFolder
	}
	return lasting
}

// Targets resolves whom to act for: the invoking user, or (as root) the console user or the
// named ones.
func (in *Installer) Targets(systemWide bool, names []string) ([]Target, error) {
	if !systemWide {
		if len(names) > 0 {
			return nil, errors.New("--user needs --system-wide")
		}
		u, err := user.Current()
		if err != nil {
			return nil, fmt.Errorf("who am I: %w", err)
		}
		if u.Uid == "0" && !in.dryRun {
			return nil, errors.New("running as root: the agent must run as the user, so use --system-wide (for the console user) or --user NAME")
		}
		t := toTarget(u)
		if home := os.Getenv("HOME"); filepath.IsAbs(home) {
			t.Home = home // the user's own idea of home, as launchd and systemd will see it
		}
		return []Target{t}, checkHome(t)
	}
	if os.Geteuid() != 0 && !in.dryRun {
		return nil, errors.New("--system-wide acts for other users and needs root (run it from the MDM's post-install script)")
	}
	in.chown = true
	if len(names) == 0 {
		name, err := in.consoleUser()
		if err != nil {
			return nil, err
		}
		names = []string{name}
	}
	var ts []Target
	var errs []error
	for _, n := range names {
		u, err := user.Lookup(n)
		if err != nil {
			errs = append(errs, fmt.Errorf("user %q: %w", n, err))
			continue
		}
		t := toTarget(u)
		if err := checkHome(t); err != nil {
			errs = append(errs, err)
			continue
		}
		ts = append(ts, t)
	}
	// Every user is checked before anything is planned or done: a plan printed for users it
	// then fails for helps nobody.
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ts, nil
}

// checkHome refuses a user whose home folder is missing (a system account such as nobody): the
// agent and its logs live there.
func checkHome(t Target) error {
	fi, err := os.Stat(t.Home)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("user %s has no home folder (%s): the agent, its state and its logs live there; is it a person's account?", t.Name, t.Home)
	}
	return nil
}

func toTarget(u *user.User) Target {
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return Target{Name: u.Username, UID: uid, GID: gid, Home: u.HomeDir}
}

// consoleUser is the user logged in at the Mac's screen; nobody is logged in at the login window.
func (in *Installer) consoleUser() (string, error) {
	if in.goos != "darwin" {
		return "", errors.New("--system-wide without --user finds the console user on macOS only; name the users with --user")
	}
	name, ok := consoleUserOf(in.run)
	if !ok {
		return "", fmt.Errorf("no user is logged in at the console (%q); the agent will be installed at the next run, or name users with --user", name)
	}
	return name, nil
}

// consoleUserOf asks macOS who owns the console; ok is false at the login window (nobody, root
// or the setup assistant's user).
func consoleUserOf(r runner) (name string, ok bool) {
	out, err := r.run("stat", "-f", "%Su", "/dev/console")
	name = strings.TrimSpace(out)
	return name, err == nil && name != "" && name != "root" && name != "_mbsetupuser"
}

// agentPath is where the agent definition goes for t.
func (in *Installer) agentPath(t Target) string {
	if in.goos == "darwin" {
		return filepath.Join(t.Home, "Library", "LaunchAgents", Label+".plist")
	}
	return filepath.Join(t.Home, ".config", "systemd", "user", Label+".service")
}

func (in *Installer) logDir(t Target) string {
	if in.goos == "darwin" {
		return filepath.Join(t.Home, "Library", "Logs", "CoworkBridge")
	}
	return filepath.Join(t.Home, ".local", "state", "coworkbridge", "logs")
}

func (in *Installer) Install(t Target) error {
	def := unitFor(in.exe)
	if in.goos == "darwin" {
		def = plistFor(in.exe, in.logDir(t))
	}
	if in.dryRun {
		fmt.Fprintf(in.out, "# %s\n%s\n", in.agentPath(t), def)
	} else {
		if err := in.mkdirOwned(t, in.logDir(t)); err != nil {
			return err
		}
		if err := in.mkdirOwned(t, filepath.Dir(in.agentPath(t))); err != nil {
			return err
		}
		if err := in.writeOwned(t, in.agentPath(t), def, 0o644); err != nil {
			return err
		}
	}
	if in.goos == "darwin" {
		return in.launchctlLoad(t)
	}
	return in.systemdLoad(t)
}

func (in *Installer) launchctlLoad(t Target) error {
	domain := "gui/" + strconv.Itoa(t.UID)
	service := domain + "/" + Label
	// bootout fails harmlessly when nothing is loaded; bootstrap fails if something still is.
	in.cmd(true, "launchctl", "bootout", service)
	if err := in.cmd(false, "launchctl", "enable", service); err != nil {
		return err
	}
	if err := in.cmd(false, "launchctl", "bootstrap", domain, in.agentPath(t)); err != nil {
		return fmt.Errorf("%w; is %s logged in? (the gui domain exists only while the user has a session)", err, t.Name)
	}
	if err := in.cmd(false, "launchctl", "print", service); err != nil {
		return fmt.Errorf("installed but launchd does not list the agent: %w", err)
	}
	if !in.dryRun {
		fmt.Fprintf(in.out, "coworkbridge agent installed for %s: %s\n", t.Name, in.agentPath(t))
	}
	return nil
}

func (in *Installer) systemdLoad(t Target) error {
	if in.chown {
		return errors.New("--system-wide is for macOS; on Linux run install as each user")
	}
	for _, args := range [][]string{{"--user", "daemon-reload"}, {"--user", "enable", "--now", Label + ".service"}, {"--user", "is-active", Label + ".service"}} {
		if err := in.cmd(false, "systemctl", args...); err != nil {
			return err
		}
	}
	if !in.dryRun {
		fmt.Fprintf(in.out, "coworkbridge unit installed and started: %s\n", in.agentPath(t))
	}
	return nil
}

// Uninstall stops the agent, removes our hooks from t's sessions, then the agent definition (and
// with purge its logs and state).
func (in *Installer) Uninstall(t Target, purge bool) error {
	if in.goos == "darwin" {
		in.cmd(true, "launchctl", "bootout", "gui/"+strconv.Itoa(t.UID)+"/"+Label)
	} else {
		in.cmd(true, "systemctl", "--user", "disable", "--now", Label+".service")
	}
	// At once after the stop (before it, the daemon would put them back): an enforce hook left
	// in a session with no daemon to answer denies every call.
	if in.dryRun {
		fmt.Fprintf(in.out, "%s unhook   # as %s\n", shellQuote([]string{in.exe}), t.Name)
	} else {
		unhook := in.unhook
		if unhook == nil {
			unhook = in.unhookSessions
		}
		n, err := unhook(t)
		if err != nil {
			return fmt.Errorf("remove coworkbridge's hooks from %s's sessions (run 'coworkbridge unhook' as %s): %w", t.Name, t.Name, err)
		}
		fmt.Fprintf(in.out, "coworkbridge's hooks removed from %d session(s) of %s\n", n, t.Name)
	}
	paths := []string{in.agentPath(t)}
	if purge {
		state := filepath.Join(t.Home, ".local", "state", "coworkbridge")
		if in.goos == "darwin" {
			state = filepath.Join(t.Home, "Library", "Application Support", "CoworkBridge")
		}
		paths = append(paths, in.logDir(t), state)
	}
	for _, p := range paths {
		if in.dryRun {
			fmt.Fprintf(in.out, "rm -rf %q\n", p)
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	if in.goos == "linux" && !in.dryRun {
		in.cmd(true, "systemctl", "--user", "daemon-reload")
	}
	if !in.dryRun {
		fmt.Fprintf(in.out, "coworkbridge agent removed for %s%s\n", t.Name, map[bool]string{true: " (logs and state purged)", false: "; logs kept"}[purge])
	}
	return nil
}

// unhookSessions removes our hooks from t's sessions: in this process when it is t's, else by
// running this binary's unhook as t, so that the settings files it rewrites stay t's.
func (in *Installer) unhookSessions(t Target) (int, error) {
	if !in.chown {
		env, err := managedconfig.SystemEnv()
		if err != nil {
			return 0, err
		}
		env.GOOS, env.Home = in.goos, t.Home
		return unhookUser(env)
	}
	return unhookAs(t, false)
}

// unhookAs runs this binary's unhook as t, so that the settings files it rewrites stay t's and
// root does none of t's file work; with purge it also removes t's system-mode worker state.
func unhookAs(t Target, purge bool) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("find this binary: %w", err)
	}
	args := []string{"unhook", "--quiet-count"}
	if purge {
		args = append(args, "--purge-worker-state")
	}
	cmd := exec.Command(self, args...)
	cmd.Env = []string{"HOME=" + t.Home, "PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(t.UID), Gid: uint32(t.GID)}}
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("%s unhook as %s: %w", self, t.Name, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, fmt.Errorf("%s unhook as %s printed %q", self, t.Name, out)
	}
	return n, nil
}

// unhookUser removes our hooks from every session under the sessions roots of env's user:
// managed.json's (read, never written), or the defaults.
func unhookUser(env managedconfig.Env) (int, error) {
	paths, err := env.Paths()
	if err != nil {
		return 0, err
	}
	s := managedconfig.NewLoader(env, paths).Load()
	return injector.UnhookAll(s.Config.SessionsRoots, nil), nil
}

// Unhook is unhookUser for a user whose daemon must be stopped first: while it runs it puts the
// hooks back at once.
func Unhook(env managedconfig.Env) (int, error) {
	paths, err := env.Paths()
	if err != nil {
		return 0, err
	}
	if daemon.Running(paths.LockFile()) {
		return 0, fmt.Errorf("the daemon is running and would put the hooks back; stop it first (%s), or use 'coworkbridge uninstall'", stopCommand(runtime.GOOS))
	}
	return unhookUser(env)
}

// ConsoleUser is the user logged in at the Mac's screen; ok is false at the login window (and
// off macOS, where name is what was found instead).
func ConsoleUser() (name string, ok bool) { return consoleUserOf(execRunner{}) }

// RestartCommand is how the user starts (or, kill, restarts) their agent on this platform.
func RestartCommand(goos string, kill bool) string {
	if goos == "darwin" {
		if kill {
			return "launchctl kickstart -k gui/$(id -u)/" + Label
		}
		return "launchctl kickstart gui/$(id -u)/" + Label
	}
	if kill {
		return "systemctl --user restart " + Label
	}
	return "systemctl --user start " + Label
}

// stopCommand is how the user stops their agent on this platform.
func stopCommand(goos string) string {
	if goos == "darwin" {
		return "launchctl bootout gui/$(id -u)/" + Label
	}
	return "systemctl --user stop " + Label
}

// cmd runs (or, dry, prints) one command. tolerant: a failure is expected and ignored.
func (in *Installer) cmd(tolerant bool, name string, args ...string) error {
	if in.dryRun {
		fmt.Fprintln(in.out, shellQuote(append([]string{name}, args...)))
		return nil
	}
	out, err := in.run.run(name, args...)
	if err != nil && !tolerant {
		return fmt.Errorf("%s: %w: %s", shellQuote(append([]string{name}, args...)), err, strings.TrimSpace(out))
	}
	return nil
}

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// mkdirOwned creates dir; as root for a user, every folder it creates belongs to that user.
func (in *Installer) mkdirOwned(t Target, dir string) error {
	var created []string
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		created = append(created, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if !in.chown {
		return nil
	}
	for _, d := range append(created, dir) {
		if err := os.Chown(d, t.UID, t.GID); err != nil {
			return fmt.Errorf("give %s to %s: %w", d, t.Name, err)
		}
	}
	return nil
}

func (in *Installer) writeOwned(t Target, path string, data []byte, perm fs.FileMode) error {
	if err := renameio.WriteFile(path, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if in.chown {
		if err := os.Chown(path, t.UID, t.GID); err != nil {
			return fmt.Errorf("give %s to %s: %w", path, t.Name, err)
		}
	}
	return nil
}

// plistFor is the LaunchAgent: started at login, restarted when it fails (not when it exits
// cleanly, which is an admin's or the user's stop), at background priority.
func plistFor(exe, logDir string) []byte {
	esc := xmlText
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>` + Label + `</string>
	<key>ProgramArguments</key>
	<array>
		<string>` + esc(exe) + `</string>
		<string>run</string>
	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ThrottleInterval</key>
	<integer>10</integer>
	<key>ProcessType</key>
	<string>Background</string>
	<key>StandardOutPath</key>
	<string>` + esc(filepath.Join(logDir, "daemon.log")) + `</string>
	<key>StandardErrorPath</key>
	<string>` + esc(filepath.Join(logDir, "daemon.log")) + `</string>
</dict>
</plist>
`)
}

// xmlText escapes s for a property list's <string>.
func xmlText(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// unitFor is the systemd user unit with the same lifecycle as the LaunchAgent.
func unitFor(exe string) []byte {
	return []byte(`[Unit]
Description=coworkbridge: organisation policy for Claude Cowork sessions
After=default.target

[Service]
ExecStart=` + systemdQuote(exe) + ` run
Restart=on-failure
RestartSec=10
KillSignal=SIGTERM
TimeoutStopSec=10

[Install]
WantedBy=default.target
`)
}

func systemdQuote(s string) string {
	if !strings.ContainsAny(s, " \t\"'\\") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// WriteDropIn writes the managed-settings drop-in for cfg (needs root), after checking it against
// the settings schema: one the CLI could not read would stop every session on the machine.
func (in *Installer) WriteDropIn(cfg managedconfig.Config) error {
	if err := in.checkHookProgram(); err != nil {
		return err
	}
	path := filepath.Join(in.managedDir, dropin.Name)
	sc, err := settingsschema.New()
	if err != nil {
		return err
	}
	data, err := dropin.Content(dropin.Hook{Exe: in.exe, System: in.system}, cfg, sc)
	if err != nil {
		return err
	}
	if in.dryRun {
		fmt.Fprintf(in.out, "# %s\n%s", path, data)
		return nil
	}
	if err := dropin.Write(in.managedDir, data); err != nil {
		return err
	}
	h := dropin.Hook{Exe: in.exe, System: in.system}
	what := "calls " + h.Program()
	if in.system {
		what += " --system"
	}
	if cfg.Lockdown {
		what += ", under lockdown (only managed hooks run)"
	}
	fmt.Fprintf(in.out, "every Claude Code session on this machine now %s (%s)\n", what, path)
	return nil
}

// checkHookProgram refuses a drop-in naming a hook program that is not installed beside the
// binary: every Claude Code session on the machine would then have each tool call blocked.
func (in *Installer) checkHookProgram() error {
	h := dropin.Hook{Exe: in.exe, System: in.system}
	err := dropin.CheckProgram(h)
	if err == nil {
		return nil
	}
	src := "./cmd/" + managedconfig.UserHookProgramName
	if in.system {
		src = "./cmd/" + managedconfig.HookProgramName
	}
	err = fmt.Errorf("%w (or build it: go build -o '%s' %s)", err, h.Program(), src)
	if !in.dryRun {
		return err
	}
	fmt.Fprintf(in.out, "warning: %v\n", err)
	return nil
}

// RemoveDropIn removes the managed-settings drop-in (needs root).
func (in *Installer) RemoveDropIn() error {
	path := filepath.Join(in.managedDir, dropin.Name)
	if in.dryRun {
		fmt.Fprintf(in.out, "rm -f %q\n", path)
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s (needs root): %w", path, err)
	}
	return nil
}
