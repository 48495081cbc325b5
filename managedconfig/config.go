// Package managedconfig finds, parses and validates managed.json, the file an organisation's MDM
// delivers to switch coworkbridge on and choose its mode and policy. It supplies the defaults, and
// keeps a last-known-good copy so that a broken file never relaxes enforcement.
//
// It does not interpret the policy: the policy fields are only checked for shape here and are given
// meaning by the classifier. It does not touch sessions, and it does not watch the file (package
// managedconfig/watch does, for the daemon: the host hook, which reads it, links no watcher).
package managedconfig

import (
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Version is the only managed.json format version this build understands.
const Version = 1

// Mode says whether verdicts are applied.
type Mode string

const (
	// Observe records what would have been decided and blocks nothing.
	Observe Mode = "observe"
	// Enforce applies deny and ask verdicts and denies when no verdict arrives in time.
	Enforce Mode = "enforce"
)

// Config is one validated managed.json, with defaults filled in and paths made absolute.
type Config struct {
	Version       int
	CoworkEnabled bool
	Mode          Mode
	// SessionsRoots are absolute folders under which Cowork keeps its session folders.
	SessionsRoots []string
	// HomeRoots are, in system mode, the sessions roots named under the home (~/...), as paths
	// relative to a home: SessionsRoots holds them under each home known when the file was read,
	// and RootsOf under a home made since.
	HomeRoots []string
	// HookTimeout is the timeout written into the hook entry; Claude Code lets the call through
	// when it expires, so the hook itself gives up after DecisionTimeout, well before.
	HookTimeout       time.Duration
	DecisionTimeout   time.Duration
	HeartbeatInterval time.Duration
	RescanInterval    time.Duration
	// MaxLineBytes bounds one spool line; a larger event is denied in enforce mode.
	MaxLineBytes int64
	Policy       Policy
	Telemetry    Telemetry
	LogLevel     slog.Level
	// Lockdown asks the managed-settings drop-in to stop every user and project hook
	// (allowManagedHooksOnly), to allow only the policy's MCP servers, and to run the host hook on
	// settings changes (ConfigChange); the host hook then judges every call itself.
	Lockdown bool
	// ForceRemoteSettingsRefresh (lockdown only) writes forceRemoteSettingsRefresh into the
	// drop-in: a CLI eligible for the organisation's server-managed settings refuses to start
	// unless it fetched them fresh, so a cached copy (remote-settings.json) can never stand in
	// for them and push the drop-in out of the managed tier. The cost: no such CLI starts while
	// the settings server cannot be reached.
	ForceRemoteSettingsRefresh bool
	// RequiredMinimumVersion, when set, is written into the drop-in: Claude Code older than it
	// refuses to start (one that predates onFailure cannot fail closed for us).
	RequiredMinimumVersion string
	// AllowedSettings names what session settings may keep beyond the safe list: a top-level key
	// ("statusLine"), one env variable ("env.HTTPS_PROXY"), one hook event ("hooks.Stop"), or one
	// MCP server ("mcpServers.github").
	AllowedSettings []string
}

// Policy is the admin's adjustment of the classifier's default rules.
type Policy struct {
	RulesDirs          []string
	DisabledRules      []string
	RuleModes          map[string]Mode
	AllowedExecutables []string
	// AllowedAgents are agent programs the session's agent may start although no hook of the
	// session judges their tool calls (an approved internal agent).
	AllowedAgents []string
	// TrustedSources are hosts and MCP servers (mcp:<name>) whose content a session's flow does
	// not count as untrusted, and to which a send is not outward (the flow rules).
	TrustedSources []string
	// AllowedMCPServers applies only when RestrictMCPServers is true, that is when the file names
	// the key at all: an empty list then allows no server, while an absent key allows every one.
	AllowedMCPServers  []string
	RestrictMCPServers bool
	// MCPServers are the same servers as the admin wrote them, with what each starts where the
	// admin said: lockdown's drop-in names a server by its command or URL, which a server the
	// agent makes cannot copy by copying its name.
	MCPServers []MCPServer
	// QuarantineOnInjection: in enforce mode, a session whose instruction or memory files are
	// found holding text a block rule forbids (prompt injection, forged approvals) is
	// quarantined until the text is gone. The files themselves are never changed.
	QuarantineOnInjection bool
	// Places is the map of the Mac the policy protects files by: not read from the file, but
	// made from the platform, the daemon's folders and sessions_roots (see places).
	Places []Place
	// Notices are what users are told beside coworkbridge's reason when a call is denied or
	// asked (managed.json's block_message). They sit with the policy because they name its
	// rules: an unknown rule id is a policy problem.
	Notices Notices
}

// Servers is the policy's MCP servers as the admin wrote them, or, for a Policy built with names
// alone, one by name each.
func (p Policy) Servers() []MCPServer {
	if len(p.MCPServers) > 0 || len(p.AllowedMCPServers) == 0 {
		return p.MCPServers
	}
	out := make([]MCPServer, len(p.AllowedMCPServers))
	for i, n := range p.AllowedMCPServers {
		out[i] = MCPServer{Name: n}
	}
	return out
}

// MCPServer is one MCP server the admin allows: by name alone, or with the exact command (program
// and arguments) of a stdio server or the URL of a remote one.
type MCPServer struct {
	Name    string
	Command []string
	URL     string
}

// Telemetry configures the decision log.
type Telemetry struct {
	Path      string
	MaxFileMB int
	MaxFiles  int
	Redact    bool
	// Inputs is what is logged of the input of calls nothing objected to: "all", "metadata" or
	// "none". Deny and ask records always keep theirs.
	Inputs string
	// ReadGroup, in system mode, is the group whose members may read the logs (an admin group):
	// the log folder 0750 and its files 0640, that group's. "": root alone.
	ReadGroup string
	// RetainedMinDays is how long a denial, ask or finding stays in the retained log at the least
	// (the log outgrows its bound rather than drop one younger, up to four times); 0: by size only.
	RetainedMinDays int
}

// Defaults returns the configuration that applies to every field the file leaves out.
func Defaults(env Env, paths Paths) Config {
	c := Config{
		Version:           Version,
		CoworkEnabled:     false,
		Mode:              Observe,
		SessionsRoots:     defaultRoots(env),
		HomeRoots:         defaultHomeRoots(env),
		HookTimeout:       30 * time.Second,
		DecisionTimeout:   10 * time.Second,
		HeartbeatInterval: 5 * time.Minute,
		RescanInterval:    30 * time.Second,
		MaxLineBytes:      4 << 20,
		Telemetry: Telemetry{
			Path:      filepath.Join(paths.LogDir, "decisions.jsonl"),
			MaxFileMB: 50,
			MaxFiles:  5,
			Redact:    true,
			Inputs:    "all",
			// A month: long enough for a security team's monthly review to find every deny.
			RetainedMinDays: 30,
		},
		LogLevel: slog.LevelInfo,
	}
	c.Policy.Places = places(env, paths, c)
	return c
}

// coworkRoots are where Cowork keeps its sessions, under a home. Written out, not joined: a
// call at start-up would run in every hook process.
var coworkRoots = []string{
	"Library/Application Support/Claude/local-agent-mode-sessions",
	"Library/Application Support/Claude-3p/local-agent-mode-sessions",
}

// defaultRoots are Cowork's sessions roots under the home, or in system mode under every home.
func defaultRoots(env Env) []string {
	homes := []string{env.Home}
	if env.System {
		homes = env.Homes
	}
	var roots []string
	for _, h := range homes {
		for _, r := range coworkRoots {
			roots = append(roots, filepath.Join(h, r))
		}
	}
	return roots
}

func defaultHomeRoots(env Env) []string {
	if !env.System {
		return nil
	}
	return slices.Clone(coworkRoots)
}

// RootsOf is the sessions roots under home: those named under every home (HomeRoots), and the
// absolute ones inside it. A root outside every home is nobody's by this reckoning.
func (c Config) RootsOf(home string) []string {
	var out []string
	for _, r := range c.HomeRoots {
		out = append(out, filepath.Join(home, r))
	}
	for _, r := range c.SessionsRoots {
		if strings.HasPrefix(r, home+string(filepath.Separator)) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// Limits on values, named in error messages so an admin knows what is allowed.
const (
	minInterval        = time.Second
	maxHookTimeout     = 10 * time.Minute
	maxHeartbeat       = 24 * time.Hour
	maxRescan          = 10 * time.Minute
	minLineBytes       = 1 << 10
	maxLineBytes       = 256 << 20
	maxFileMB          = 10240
	maxFiles           = 100
	maxConfigFileBytes = 1 << 20
)
