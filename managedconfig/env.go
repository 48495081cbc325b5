package managedconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Environment variables that override the configuration. They exist for tests and development;
// a deployment sets none of them, and the daemon logs a warning when one is in effect.
const (
	EnvManagedConfig = "COWORKBRIDGE_MANAGED_CONFIG"
	EnvSessionsRoot  = "COWORKBRIDGE_SESSIONS_ROOT"
	EnvStateDir      = "COWORKBRIDGE_STATE_DIR"
	EnvLogDir        = "COWORKBRIDGE_LOG_DIR"
	// EnvSocket is the system-mode socket's path (Paths.Socket).
	EnvSocket = "COWORKBRIDGE_SOCKET"
	// EnvDropInDir is the Claude Code managed-settings folder the daemon expects the drop-in in
	// (the tests' own /etc/claude-code lives in a mount namespace of the CLI's).
	EnvDropInDir = "COWORKBRIDGE_DROPIN_DIR"
	// EnvPeopleUnder limits the people a system-mode daemon serves to those whose home is inside
	// this folder, so that several test machines' daemons on one host each serve their own.
	EnvPeopleUnder = "COWORKBRIDGE_PEOPLE_UNDER"
)

// Env is everything outside the file that the configuration depends on: the platform, the user's
// home folder and the process environment. It is passed in rather than read from globals so that
// tests can describe a Mac while running on Linux.
type Env struct {
	GOOS   string
	Home   string
	Getenv func(string) string
	// Executable is the running coworkbridge program, a place the policy protects ("" unknown).
	Executable string
	// System is system mode: the root daemon serving every user of the Mac, with root's folders
	// (see Paths) and the users' homes in Homes. Home is then root's own.
	System bool
	// Homes are the home folders of the users a system-mode daemon serves: the sessions roots
	// under ~ are looked for in each.
	Homes []string
}

// MacExecutable is where the package puts coworkbridge on a Mac (deploy/pkg): the program a
// Mac's map names when it is previewed from another machine.
const MacExecutable = "/Library/Application Support/CoworkBridge/bin/coworkbridge"

// The hook programs a package installs beside coworkbridge (cmd/coworkbridge-hook, system mode's;
// cmd/coworkbridge-userhook, per-user mode's), which the managed-settings drop-in runs.
const (
	HookProgramName     = "coworkbridge-hook"
	UserHookProgramName = "coworkbridge-userhook"
)

// programs are the names of coworkbridge's programs, installed side by side.
func programs() []string { return []string{"coworkbridge", HookProgramName, UserHookProgramName} }

// SystemEnv describes the running process.
func SystemEnv() (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, fmt.Errorf("find the home folder (set HOME): %w", err)
	}
	exe, _ := os.Executable() // only for the map of protected places; unknown leaves it out
	return Env{GOOS: runtime.GOOS, Home: home, Getenv: os.Getenv, Executable: exe}, nil
}

func (e Env) getenv(key string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(key)
}

// WithoutOverrides is e with the development overrides unset, whatever the process environment
// says.
func (e Env) WithoutOverrides() Env {
	get := e.Getenv
	if get == nil {
		return e
	}
	e.Getenv = func(key string) string {
		if strings.HasPrefix(key, "COWORKBRIDGE_") {
			return ""
		}
		return get(key)
	}
	return e
}

// Overrides lists the development overrides set in this environment, for the daemon's start-up log.
func (e Env) Overrides() []string {
	var set []string
	for _, k := range []string{EnvManagedConfig, EnvSessionsRoot, EnvStateDir, EnvLogDir, EnvSocket, EnvDropInDir, EnvPeopleUnder} {
		if e.getenv(k) != "" {
			set = append(set, k)
		}
	}
	return set
}

// PeopleUnder is the folder EnvPeopleUnder names, "" when unset (every person of the machine).
func (e Env) PeopleUnder() string { return e.getenv(EnvPeopleUnder) }

// DropInDirOverride is the managed-settings folder EnvDropInDir names, "" when unset.
func (e Env) DropInDirOverride() string { return e.getenv(EnvDropInDir) }

// systemConfigPath is where MDM delivers managed.json on this platform.
func (e Env) systemConfigPath() string {
	if e.GOOS == "darwin" {
		return "/Library/Application Support/CoworkBridge/managed.json"
	}
	return "/etc/coworkbridge/managed.json"
}

// ConfigCandidates lists the places the configuration is looked for, in order; the first that
// exists wins. On a Mac a configuration profile (managed preferences) comes before managed.json:
// it is the Mac's own way for an MDM to set an app's settings, and users cannot change it.
func (e Env) ConfigCandidates() []string {
	var c []string
	if p := e.getenv(EnvManagedConfig); p != "" {
		c = append(c, p)
	}
	if e.GOOS == "darwin" {
		c = append(c, managedPreferencesPath)
	}
	return append(c, e.systemConfigPath())
}

// ExistingConfig is the first of ConfigCandidates that exists: the file this user's daemon reads;
// "" when there is none. A candidate that exists but cannot be examined is returned with the
// error, so that it is reported rather than skipped; so is a link whose target is gone: removing
// the file is how an admin switches coworkbridge off, and a dangling link is no such decision (it
// would otherwise switch enforce off in silence). The daemon's loader and validate both ask here,
// so that they agree on which file is in use.
func (e Env) ExistingConfig() (string, error) {
	for _, c := range e.ConfigCandidates() {
		_, err := os.Stat(c)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return c, fmt.Errorf("examine %s: %w", c, err)
		}
		if fi, lerr := os.Lstat(c); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(c)
			return c, fmt.Errorf("%s is a link to %s, which does not exist: restore the file, or remove the link to switch coworkbridge off", c, target)
		}
	}
	return "", nil
}

// Paths are the daemon's own folders: trusted, outside every session.
type Paths struct {
	// StateDir holds daemon.lock, offsets.json, health.json, managed.last-good.json and channel/.
	StateDir string
	// LogDir holds the decision log by default.
	LogDir string
	// Socket is where host hooks reach a system-mode daemon; "" in user mode.
	Socket string
	// DropDir takes the records a hook could not hand over (see telemetry.Drop): in user mode a
	// folder of the state; in system mode root's, sticky and writable by every user.
	DropDir string
}

// LastGoodFile is the copy of the last valid managed.json.
func (p Paths) LastGoodFile() string { return filepath.Join(p.StateDir, "managed.last-good.json") }

// LockFile is the flock that allows one daemon per user.
func (p Paths) LockFile() string { return filepath.Join(p.StateDir, "daemon.lock") }

// HealthFile is the daemon's snapshot for status, rewritten at every heartbeat.
func (p Paths) HealthFile() string { return filepath.Join(p.StateDir, "health.json") }

// OffsetsFile records how far each spool has been read.
func (p Paths) OffsetsFile() string { return filepath.Join(p.StateDir, "offsets.json") }

// ChannelRoot holds each session's host channel: the lease, decisions and events of hooks that
// run on the Mac. The daemon and the host hook must agree on it.
func (p Paths) ChannelRoot() string { return filepath.Join(p.StateDir, "channel") }

// Paths resolves the daemon's folders for this platform and environment.
func (e Env) Paths() (Paths, error) {
	var p Paths
	if e.System {
		p = e.systemPaths()
	} else {
		if e.Home == "" || !filepath.IsAbs(e.Home) {
			return p, fmt.Errorf("home folder %q is not an absolute path: set HOME", e.Home)
		}
		p = e.userPaths()
	}
	var err error
	for _, o := range []struct {
		key string
		dst *string
	}{{EnvStateDir, &p.StateDir}, {EnvLogDir, &p.LogDir}, {EnvSocket, &p.Socket}} {
		if v := e.getenv(o.key); v != "" {
			if *o.dst, err = e.absPath(v); err != nil {
				return p, fmt.Errorf("%s: %w", o.key, err)
			}
		}
	}
	if e.System {
		p.DropDir = filepath.Join(filepath.Dir(p.StateDir), "dropbox")
	} else {
		p.DropDir = filepath.Join(p.StateDir, "dropped")
	}
	return p, nil
}

func (e Env) userPaths() Paths {
	if e.GOOS == "darwin" {
		return Paths{StateDir: filepath.Join(e.Home, "Library", "Application Support", "CoworkBridge"),
			LogDir: filepath.Join(e.Home, "Library", "Logs", "CoworkBridge")}
	}
	base := e.getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) { // the XDG spec says to ignore a relative value
		base = filepath.Join(e.Home, ".local", "state")
	}
	dir := filepath.Join(base, "coworkbridge")
	return Paths{StateDir: dir, LogDir: dir}
}

// systemPaths are root's: the state beside the MDM's managed.json, the logs where the system's
// are, the socket in the run folder (gone at boot, as a socket should be). The drop folder is
// beside the state (see Paths), so that it outlives a reboot.
func (e Env) systemPaths() Paths {
	if e.GOOS == "darwin" {
		return Paths{StateDir: "/Library/Application Support/CoworkBridge/state", LogDir: "/Library/Logs/CoworkBridge",
			Socket: "/var/run/coworkbridge/hook.sock"}
	}
	return Paths{StateDir: "/var/lib/coworkbridge/state", LogDir: "/var/log/coworkbridge", Socket: "/run/coworkbridge/hook.sock"}
}

// WorkerStateDir is where a system-mode worker of the user whose home is home (on goos) keeps its
// state (offsets, flows, its lock, its host channels): a folder of its own under the user's
// state folder, apart from a per-user daemon's.
func WorkerStateDir(goos, home string) (string, error) {
	p, err := Env{GOOS: goos, Home: home}.Paths()
	if err != nil {
		return "", err
	}
	return filepath.Join(p.StateDir, "system-worker"), nil
}

// WorkerChannelRoot is the host channels' folder of the worker of home (see WorkerStateDir).
func WorkerChannelRoot(goos, home string) string {
	dir, err := WorkerStateDir(goos, home)
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "channel")
}

// SystemSocket is where a system-mode daemon listens on this platform, development override
// included: what `hook --system` connects to.
func (e Env) SystemSocket() (string, error) {
	e.System = true
	p, err := e.Paths()
	return p.Socket, err
}

// UserHomes lists the home folders of the Mac's people: every folder under /Users but Shared
// (on Linux, under /home), links excluded.
func UserHomes(goos string) []string {
	base := "/home"
	if goos == "darwin" {
		base = "/Users"
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var homes []string
	for _, ent := range entries {
		name := ent.Name()
		if !ent.IsDir() || strings.HasPrefix(name, ".") || name == "Shared" || name == "Guest" {
			continue
		}
		homes = append(homes, filepath.Join(base, name))
	}
	return homes
}

// expandRoot is the folders a sessions root names: with ~ or $HOME in system mode, one per home
// served, and the root as a path under any home (rel, "" for an absolute root), for a home that
// appears later.
func (e Env) expandRoot(s string) (out []string, rel string, err error) {
	if !e.System || !(strings.HasPrefix(s, "~") || strings.HasPrefix(s, "$HOME") || strings.HasPrefix(s, "${HOME}")) {
		abs, err := e.absPath(s)
		return []string{abs}, "", err
	}
	if rel, err = e.homeRel(s); err != nil {
		return nil, "", err
	}
	for _, h := range e.Homes {
		u := e
		u.Home = h
		abs, err := u.absPath(s)
		if err != nil {
			return nil, "", err
		}
		out = append(out, abs)
	}
	return out, rel, nil
}

// homeRel is s, a path under the home (~/... or $HOME/...), relative to any home: "." for the
// home itself. One that climbs out of the home is refused: it would name another user's folder.
func (e Env) homeRel(s string) (string, error) {
	const mark = "/coworkbridge-home"
	h := e
	h.Home = mark
	abs, err := h.absPath(s)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(mark, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%q climbs out of the home folder; name a folder inside it, or an absolute path", s)
	}
	return rel, nil
}

var errRelative = errors.New("must be an absolute path or start with ~/ or $HOME/")

// absPath expands a leading ~ to the home folder and insists on an absolute, clean result.
// "~user" forms are refused: the daemon runs as one user and must not guess at another's home.
func (e Env) absPath(p string) (string, error) {
	// $HOME means the home folder too: a fleet-wide file cannot name /Users/<each user>.
	for _, h := range []string{"$HOME", "${HOME}"} {
		if p == h || strings.HasPrefix(p, h+"/") {
			p = "~" + p[len(h):]
		}
	}
	switch {
	case p == "~":
		p = e.Home
	case strings.HasPrefix(p, "~/"):
		p = filepath.Join(e.Home, p[2:])
	case strings.HasPrefix(p, "~"):
		return "", fmt.Errorf("%q: ~user is not supported; %w", p, errRelative)
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q %w", p, errRelative)
	}
	return filepath.Clean(p), nil
}
