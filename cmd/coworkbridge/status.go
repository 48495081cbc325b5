package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	osuser "os/user"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/daemon"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/hostsocket"
	"github.com/coworkbridge/coworkbridge/installer"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// Exit statuses of `status`, for MDM compliance scripts.
const (
	statusHealthy    = 0
	statusWarning    = 1
	statusNotRunning = 2
	// statusBlocking: the daemon denies every call (an enforce file that is invalid, with no
	// good copy to run on): not a warning to look at later, every user is stopped now.
	statusBlocking = 3
)

func cmdStatus(_ context.Context, args []string, sio stdio) int {
	fs := newFlags("status", "[--json] [--user NAME]", "Says whether the daemon runs and guards every session. Exit status: 0 healthy,\n"+
		"1 a warning is active, 2 the daemon is not running, 3 every call is denied (an enforce file that is\n"+
		"invalid with no last good copy: fix it now), 64 usage. As root (an MDM script), --user names\n"+
		"the user whose daemon to ask; without it, the console user's.", sio)
	asJSON := fs.Bool("json", false, "print the state as one JSON object")
	user := fs.String("user", "", "as root: the user whose daemon to ask (default: the console user)")
	if code, done := fs.parse(args); done {
		return code
	}
	if code, done := fs.noArgs(); done {
		return code
	}
	var named *osuser.User
	if *user != "" {
		u, err := osuser.Lookup(*user)
		if err != nil {
			return fs.usageError("--user %s: no such user on this machine (%v)", *user, err)
		}
		named = u
	}
	v, ok := systemStatus(time.Now())
	if ok && named != nil && v.Snapshot != nil {
		// Root asked about one user: that user's sessions, as the daemon shows the user.
		v.Snapshot = forHome(*v.Snapshot, named.HomeDir)
	}
	if !ok && *user == "" && installer.SystemInstalled(runtime.GOOS) {
		// Installed in system mode and no socket: the daemon is not running (it removes its
		// socket when it stops), and it is the system daemon that must be started.
		v, ok = statusView{GOOS: runtime.GOOS, Now: time.Now(), System: true}, true
	}
	if ok {
		return printStatus(v, *asJSON, sio)
	}
	env, err := statusEnv(*user)
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge status:", err)
		return exitFail
	}
	paths, err := env.Paths()
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge status:", err)
		return exitFail
	}
	return printStatus(readStatus(paths, time.Now()), *asJSON, sio)
}

func printStatus(v statusView, asJSON bool, sio stdio) int {
	if asJSON {
		enc := json.NewEncoder(sio.out)
		enc.SetIndent("", "  ")
		enc.Encode(v.jsonView())
	} else {
		v.render(sio.out)
	}
	return v.exitCode()
}

// systemStatus asks a system-mode daemon, when its socket is there: ok is false when it is not
// (a per-user install). The daemon shows a user the sessions under their home only.
func systemStatus(now time.Time) (statusView, bool) {
	env, err := managedconfig.SystemEnv()
	if err != nil {
		return statusView{}, false
	}
	sock, err := env.SystemSocket()
	if fi, serr := os.Lstat(sock); err != nil || serr != nil || fi.Mode()&fs.ModeSocket == 0 {
		return statusView{}, false
	}
	v := statusView{GOOS: runtime.GOOS, Now: now, System: true}
	a, err := hostsocket.Call(sock, hostsocket.Request{Kind: hostsocket.KindStatus}, now.Add(5*time.Second))
	if err != nil {
		v.ReadErr = err // the socket is there and nobody answers: the system daemon is down
		return v, true
	}
	var snap health.Snapshot
	if err := json.Unmarshal(a.Status, &snap); err != nil {
		v.Running, v.ReadErr = true, fmt.Errorf("the system daemon's status: %w", err)
		return v, true
	}
	v.Running, v.Snapshot = true, &snap
	return v, true
}

// forHome is s as the user whose home is home sees it (health.Snapshot.Scoped).
func forHome(s health.Snapshot, home string) *health.Snapshot {
	home = filepath.Clean(home)
	scoped := s.Scoped(func(path string) bool {
		return strings.HasPrefix(filepath.Clean(path), home+string(filepath.Separator))
	})
	return &scoped
}

// statusEnv is the environment of the user whose daemon status asks: the caller's, or (for a
// root MDM script) the named user's or the console user's, whose folders are derived from their
// home alone (root's XDG variables and development overrides say nothing about them).
func statusEnv(name string) (managedconfig.Env, error) {
	if name == "" && (os.Geteuid() != 0 || runtime.GOOS != "darwin") {
		return managedconfig.SystemEnv() // root on Linux may run a daemon of its own
	}
	if name == "" {
		var ok bool
		if name, ok = installer.ConsoleUser(); !ok {
			return managedconfig.Env{}, fmt.Errorf("no user is logged in at the console (%q); name one with --user NAME", name)
		}
	}
	u, err := osuser.Lookup(name)
	if err != nil {
		return managedconfig.Env{}, fmt.Errorf("user %q: %w", name, err)
	}
	return managedconfig.Env{GOOS: runtime.GOOS, Home: u.HomeDir}, nil
}

// statusView is everything `status` reports, gathered once.
type statusView struct {
	GOOS string // whose service manager the advice names
	// System: the daemon is system mode's (the LaunchDaemon or system unit), which the advice
	// names instead of the per-user agent.
	System   bool
	Now      time.Time
	Running  bool
	Snapshot *health.Snapshot
	ReadErr  error
	Stale    bool
}

func readStatus(paths managedconfig.Paths, now time.Time) statusView {
	v := statusView{GOOS: runtime.GOOS, Now: now, Running: daemon.Running(paths.LockFile())}
	s, err := health.ReadSnapshot(paths.HealthFile())
	switch {
	case err == nil:
		v.Snapshot = &s
		v.Stale = v.Running && s.WrittenAt.Before(now.Add(-staleAfter(s)))
	case !errors.Is(err, fs.ErrNotExist):
		v.ReadErr = err
	}
	return v
}

// staleAfter is how old a snapshot may be while the daemon runs: it rewrites it every heartbeat.
func staleAfter(s health.Snapshot) time.Duration {
	d, err := time.ParseDuration(s.Daemon.HeartbeatInterval)
	if err != nil || d <= 0 {
		d = 5 * time.Minute
	}
	return 2*d + time.Minute
}

func (v statusView) exitCode() int {
	switch {
	case !v.Running:
		return statusNotRunning
	case v.Snapshot != nil && v.Snapshot.Config.FailingClosed:
		return statusBlocking
	case v.Snapshot == nil || v.Stale || !v.Snapshot.Healthy():
		return statusWarning
	}
	return statusHealthy
}

func (v statusView) jsonView() any {
	return struct {
		Running  bool             `json:"running"`
		Healthy  bool             `json:"healthy"`
		Stale    bool             `json:"stale,omitempty"`
		Error    string           `json:"error,omitempty"`
		Snapshot *health.Snapshot `json:"snapshot"`
	}{v.Running, v.exitCode() == statusHealthy, v.Stale, errString(v.ReadErr), v.Snapshot}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// restartCommand is how to start (or, kill, restart) the daemon status looked at.
func (v statusView) restartCommand(kill bool) string {
	if v.System {
		return installer.SystemRestartCommand(v.GOOS, kill)
	}
	return installer.RestartCommand(v.GOOS, kill)
}

func (v statusView) render(w io.Writer) {
	s := v.Snapshot
	switch {
	case !v.Running && s != nil && !s.Config.Enabled:
		// Switched off when it last ran: its hooks were taken out, so nothing waits for it.
		fmt.Fprintln(w, "coworkbridge is not running, and was switched off (cowork_enabled false) when it last ran: no session carries its hook, nothing is recorded or blocked.")
		fmt.Fprintf(w, "  last health snapshot: %s\n", ago(v.Now, s.WrittenAt))
		return
	case !v.Running:
		fmt.Fprintln(w, "coworkbridge is NOT running: Cowork sessions in enforce mode deny every tool call, in observe mode nothing is recorded.")
		fmt.Fprintf(w, "  what to do: start it with '%s', or ask IT to reinstall coworkbridge.\n", v.restartCommand(false))
		if s != nil {
			fmt.Fprintf(w, "  last health snapshot: %s\n", ago(v.Now, s.WrittenAt))
		}
		return
	case s == nil:
		fmt.Fprintln(w, "coworkbridge is running but has written no health snapshot yet.")
		if v.ReadErr != nil {
			fmt.Fprintf(w, "  %v\n", v.ReadErr)
		}
		return
	}
	state := "off"
	switch {
	case s.Config.FailingClosed:
		state = "enforce: FAILING CLOSED, every call denied"
	case s.Config.Enabled:
		state = "mode " + string(s.Config.Mode)
	}
	if s.Config.Lockdown {
		state += ", lockdown"
	}
	up := time.Duration(s.Daemon.UptimeSeconds) * time.Second
	if !s.Daemon.StartedAt.IsZero() && v.Now.After(s.Daemon.StartedAt) {
		up = v.Now.Sub(s.Daemon.StartedAt).Round(time.Second) // now, not at the last heartbeat
	}
	fmt.Fprintf(w, "coworkbridge is running (pid %d, up %s), %s, config %s\n", s.Daemon.PID, up, state, configLine(s.Config))
	if s.Config.FailingClosed {
		fmt.Fprintf(w, "! every tool call in every session is denied: managed.json asks for enforce but is invalid (%s), and this Mac has no last good copy to run on\n"+
			"  what to do: fix the file (coworkbridge validate '%s' names every problem) and deliver it again; the daemon takes it at once\n", s.Config.Problem, s.Config.Path)
	}
	fmt.Fprintf(w, "sessions: %d live, %d hooked, %d unverified, %d silent\n", s.Counts.Live, s.Counts.Hooked,
		s.Counts.Unverified, silent(s))
	fmt.Fprintf(w, "last event: %s\n", lastEvent(v.Now, s))
	if len(s.CLIVersions) > 0 {
		fmt.Fprintf(w, "Claude Code seen: %s\n", strings.Join(s.CLIVersions, ", "))
	}
	today := s.Today
	if today.Date != v.Now.Format(time.DateOnly) {
		today = health.Today{}
	}
	fmt.Fprintf(w, "today: %s, %s, %s", counted(today.Denies, "deny", "denies"), counted(today.Asks, "ask", "asks"), counted(today.Events, "event", "events"))
	if today.WouldDenies+today.WouldAsks > 0 {
		// Objections observe only recorded: kept apart, whichever mode is in force now.
		fmt.Fprintf(w, "; not applied (observe): %s, %s", counted(today.WouldDenies, "would-be deny", "would-be denies"),
			counted(today.WouldAsks, "would-be ask", "would-be asks"))
	}
	fmt.Fprintln(w)
	for _, wk := range s.Workers {
		fmt.Fprintln(w, workerLine(wk))
	}
	switch r := s.Record; {
	case r == nil:
	case r.Head == "" && s.Totals.Events > 0:
		// Records came after the check: the head is read at start and at each heartbeat.
		fmt.Fprintf(w, "decision log: %s, written since it was last checked (%s); its chain head is published at the next heartbeat\n",
			r.Log, ago(v.Now, r.CheckedAt))
	case r.Head == "":
		fmt.Fprintf(w, "decision log: %s, empty when last checked (%s); its chain head is published at the next heartbeat\n",
			r.Log, ago(v.Now, r.CheckedAt))
	default:
		fmt.Fprintf(w, "decision log: %s, chain head %s at %d bytes (checked %s; 'coworkbridge report --head %s %s' verifies it)\n",
			r.Log, r.Head, r.Size, ago(v.Now, r.CheckedAt), r.Head, r.Log)
	}
	if v.Stale {
		fmt.Fprintf(w, "! health_stale: the snapshot is %s old; the daemon may be hung\n  what to do: restart it (%s)\n", v.Now.Sub(s.WrittenAt).Round(time.Second), v.restartCommand(true))
	}
	if len(s.Warnings) == 0 && !v.Stale {
		fmt.Fprintln(w, "healthy: no warnings")
		return
	}
	for _, wn := range s.Warnings {
		fmt.Fprintf(w, "! %s: %s\n", wn.Code, wn.Message)
		if len(wn.Sessions) > 0 {
			fmt.Fprintf(w, "  concerns: %s\n", strings.Join(wn.Sessions, ", "))
		}
		fmt.Fprintf(w, "  what to do: %s\n", wn.Action)
	}
}

// workerLine is one user's worker of system mode, as status shows it.
func workerLine(wk health.Worker) string {
	state := fmt.Sprintf("running (pid %d)", wk.PID)
	if !wk.Running {
		state = "NOT RUNNING"
	}
	line := fmt.Sprintf("worker of %s (uid %d): %s, %d session(s), %d watches", wk.User, wk.UID, state, wk.Sessions, wk.Watches)
	if wk.Starts > 1 {
		line += "; started " + counted(wk.Starts, "time", "times")
	}
	if wk.LastError != "" {
		line += "; last ended: " + wk.LastError
	}
	return line
}

func configLine(c health.ConfigState) string {
	if c.Path == "" {
		return "none (coworkbridge is off)"
	}
	line := c.Path
	if c.Hash != "" {
		line += " (" + c.Hash + ")"
	}
	if c.Origin == managedconfig.OriginLastGood {
		line += ", running on the last good copy"
	}
	return line
}

func silent(s *health.Snapshot) int {
	for _, w := range s.Warnings {
		if w.Code == health.CodeHookedButSilent {
			return s.Counts.Hooked
		}
	}
	return 0
}

func lastEvent(now time.Time, s *health.Snapshot) string {
	var last time.Time
	id := ""
	for _, se := range s.Sessions {
		if se.LastEvent.After(last) {
			last, id = se.LastEvent, se.ID
		}
	}
	if last.IsZero() {
		return "none yet"
	}
	return ago(now, last) + " (" + id + ")"
}

func ago(now, t time.Time) string {
	d := now.Sub(t).Round(time.Second)
	if d < time.Second {
		return "just now"
	}
	return d.String() + " ago"
}
