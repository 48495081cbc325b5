package managedconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/spelling"
)

// Problem is one thing wrong with a configuration.
type Problem struct {
	Field string // JSON path such as "policy.rule_modes.foo", or an environment variable name
	Msg   string
}

func (p Problem) String() string {
	if p.Field == "" {
		return p.Msg
	}
	return p.Field + ": " + p.Msg
}

// InvalidError lists every problem found in a configuration, not just the first, so that an admin
// fixes the file in one round.
type InvalidError struct {
	Source   string
	Problems []Problem
	// Partial is the policy as far as its fields parsed, so that a checker can still say which
	// rule ids no rule defines while other fields are wrong (the fields that did not parse are
	// left out, and are among Problems).
	Partial Policy
}

func (e *InvalidError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid managed config %s", e.Source)
	if len(e.Problems) == 1 {
		b.WriteString(": " + e.Problems[0].String())
		return b.String()
	}
	fmt.Fprintf(&b, " (%d problems):", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  - " + p.String())
	}
	return b.String()
}

// Parse validates the bytes of a managed.json and returns the configuration it describes, with
// defaults and environment overrides applied. source names the file in error messages.
func Parse(data []byte, source string, env Env, paths Paths) (Config, error) {
	p := parser{env: env, cfg: Defaults(env, paths)}
	p.parse(data)
	p.cfg.Policy.Places = places(env, paths, p.cfg)
	if len(p.problems) > 0 {
		return Config{}, &InvalidError{Source: source, Problems: p.problems, Partial: p.cfg.Policy}
	}
	return p.cfg, nil
}

type parser struct {
	env      Env
	cfg      Config
	problems []Problem
}

func (p *parser) addf(field, format string, args ...any) {
	p.problems = append(p.problems, Problem{Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) parse(data []byte) {
	if len(data) > maxConfigFileBytes {
		p.addf("", "the file is larger than the limit (the limit is %d bytes)", maxConfigFileBytes)
		return
	}
	members, err := readObject(data, true)
	if dup := (duplicateError{}); errors.As(err, &dup) {
		p.addf(dup.key, "%v", err) // named by its path, so that the message carries its line
		return
	}
	if err != nil {
		p.addf("", "%v", err)
		return
	}
	fields := map[string]func(string, json.RawMessage){
		"version":            p.version,
		"cowork_enabled":     func(f string, r json.RawMessage) { p.boolean(f, r, &p.cfg.CoworkEnabled) },
		"mode":               func(f string, r json.RawMessage) { p.mode(f, r, &p.cfg.Mode) },
		"sessions_roots":     p.sessionsRoots,
		"hook_timeout":       func(f string, r json.RawMessage) { p.duration(f, r, &p.cfg.HookTimeout, maxHookTimeout, true) },
		"decision_timeout":   func(f string, r json.RawMessage) { p.duration(f, r, &p.cfg.DecisionTimeout, maxHookTimeout, true) },
		"heartbeat_interval": func(f string, r json.RawMessage) { p.duration(f, r, &p.cfg.HeartbeatInterval, maxHeartbeat, false) },
		"rescan_interval":    func(f string, r json.RawMessage) { p.duration(f, r, &p.cfg.RescanInterval, maxRescan, false) },
		"max_line_bytes":     p.maxLineBytes,
		"policy":             p.policy,
		"telemetry":          p.telemetry,
		"log_level":          p.logLevel,
		"lockdown":           func(f string, r json.RawMessage) { p.boolean(f, r, &p.cfg.Lockdown) },
		"force_remote_settings_refresh": func(f string, r json.RawMessage) {
			p.boolean(f, r, &p.cfg.ForceRemoteSettingsRefresh)
		},
		"required_minimum_version": p.minimumVersion,
		"allowed_settings":         p.allowedSettings,
		"block_message":            p.blockMessage,
	}
	seen := p.eachMember("", members, fields)
	if !seen["version"] {
		p.addf("version", "missing; start the file with \"version\": %d", Version)
	}
	p.crossChecks()
	p.envOverrides()
}

// eachMember hands every member to its field function and reports unknown names.
func (p *parser) eachMember(prefix string, members []member, fields map[string]func(string, json.RawMessage)) map[string]bool {
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		path := m.key
		if prefix != "" {
			path = prefix + "." + m.key
		}
		seen[m.key] = true
		fn, ok := fields[m.key]
		if !ok {
			known := make([]string, 0, len(fields))
			for k := range fields {
				known = append(known, k)
			}
			slices.Sort(known)
			if near, ok := spelling.Suggest(m.key, known); ok {
				p.addf(path, "unknown field; did you mean %s? (the fields here are %s)", near, strings.Join(known, ", "))
				continue
			}
			p.addf(path, "unknown field; the fields here are %s", strings.Join(known, ", "))
			continue
		}
		fn(path, m.raw)
	}
	return seen
}

func (p *parser) crossChecks() {
	c := &p.cfg
	if c.ForceRemoteSettingsRefresh && !c.Lockdown {
		p.addf("force_remote_settings_refresh", "takes effect only with \"lockdown\": true (it keeps the drop-in's lockdown in the managed tier); set lockdown too, or remove this field")
	}
	if c.Lockdown && c.Policy.RestrictMCPServers {
		for i, n := range c.Policy.AllowedMCPServers {
			if !mcpServerName.MatchString(n) {
				p.addf(fmt.Sprintf("policy.allowed_mcp_servers[%d]", i), "%q cannot be named in Claude Code's managed allowedMcpServers, which lockdown writes (letters, digits, '_' and '-' only)", n)
			}
		}
	}
	if c.HookTimeout > 0 && c.DecisionTimeout > c.HookTimeout/2 {
		p.addf("decision_timeout", "%v is more than half of hook_timeout (%v): Claude Code lets a call through when its hook times out, so the hook must give up well before; use at most %v or raise hook_timeout",
			c.DecisionTimeout, c.HookTimeout, c.HookTimeout/2)
	}
}

func (p *parser) envOverrides() {
	v := p.env.getenv(EnvSessionsRoot)
	if v == "" {
		return
	}
	var roots, rels []string
	for _, r := range strings.Split(v, ":") {
		if r == "" {
			continue
		}
		abs, rel, err := p.env.expandRoot(r)
		if err != nil {
			p.addf(EnvSessionsRoot, "%v", err)
			continue
		}
		roots = append(roots, abs...)
		if rel != "" {
			rels = append(rels, rel)
		}
	}
	if len(roots) == 0 && len(rels) == 0 {
		p.addf(EnvSessionsRoot, "%q names no folder", v)
		return
	}
	p.cfg.SessionsRoots, p.cfg.HomeRoots = roots, rels
}

func (p *parser) version(field string, raw json.RawMessage) {
	n, ok := p.integer(field, raw)
	if ok && n != Version {
		p.addf(field, "%d is not supported by this build of coworkbridge, which reads version %d", n, Version)
	}
}

func (p *parser) boolean(field string, raw json.RawMessage, dst *bool) {
	if err := json.Unmarshal(raw, dst); err != nil || isNull(raw) {
		p.addf(field, "got %s, want true or false", describe(raw))
	}
}

func (p *parser) str(field string, raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || isNull(raw) {
		p.addf(field, "got %s, want a string", describe(raw))
		return "", false
	}
	return s, true
}

func (p *parser) integer(field string, raw json.RawMessage) (int64, bool) {
	// Only a bare JSON number will do: json.Number would also take the string "1".
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil {
		p.addf(field, "got %s, want a whole number", describe(raw))
		return 0, false
	}
	return n, true
}

func (p *parser) mode(field string, raw json.RawMessage, dst *Mode) {
	s, ok := p.str(field, raw)
	if !ok {
		return
	}
	switch Mode(s) {
	case Observe, Enforce:
		*dst = Mode(s)
	default:
		p.addf(field, "%q is not a mode; use %q or %q", s, Observe, Enforce)
	}
}

// duration reads a Go duration string. Hook timeouts must be whole seconds because Claude Code and
// the hook script (which reads the clock with date +%s) both count in seconds.
func (p *parser) duration(field string, raw json.RawMessage, dst *time.Duration, max time.Duration, wholeSeconds bool) {
	s, ok := p.str(field, raw)
	if !ok {
		return
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		p.addf(field, "%q is not a duration; write it like \"30s\", \"2m\" or \"1h30m\"", s)
	case d < minInterval || d > max:
		p.addf(field, "%v is out of range; allowed from %v to %v", d, minInterval, max)
	case wholeSeconds && d%time.Second != 0:
		p.addf(field, "%v is not a whole number of seconds, which Claude Code's hook timeout requires", d)
	default:
		*dst = d
	}
}

func (p *parser) maxLineBytes(field string, raw json.RawMessage) {
	n, ok := p.integer(field, raw)
	if !ok {
		return
	}
	if n < minLineBytes || n > maxLineBytes {
		p.addf(field, "%d is out of range; allowed from %d (1 KiB) to %d (256 MiB)", n, minLineBytes, maxLineBytes)
		return
	}
	p.cfg.MaxLineBytes = n
}

func (p *parser) intRange(field string, raw json.RawMessage, dst *int, lo, hi int) {
	n, ok := p.integer(field, raw)
	if !ok {
		return
	}
	if n < int64(lo) || n > int64(hi) {
		p.addf(field, "%d is out of range; allowed from %d to %d", n, lo, hi)
		return
	}
	*dst = int(n)
}

func (p *parser) sessionsRoots(field string, raw json.RawMessage) {
	items, ok := p.strings(field, raw)
	if !ok {
		return
	}
	var roots, rels []string
	for i, s := range items {
		abs, rel, err := p.env.expandRoot(s)
		if err != nil {
			p.addf(fmt.Sprintf("%s[%d]", field, i), "%v", err)
			return
		}
		roots = append(roots, abs...)
		if rel != "" {
			rels = append(rels, rel)
		}
	}
	if len(items) == 0 {
		p.addf(field, "the list is empty; name at least one folder, or leave the field out for the Cowork defaults")
		return
	}
	p.cfg.SessionsRoots, p.cfg.HomeRoots = roots, rels
}

// paths reads a list of absolute (or ~/) folder names.
func (p *parser) paths(field string, raw json.RawMessage) ([]string, bool) {
	items, ok := p.strings(field, raw)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(items))
	good := true
	for i, s := range items {
		abs, err := p.env.absPath(s)
		if err != nil {
			p.addf(fmt.Sprintf("%s[%d]", field, i), "%v", err)
			good = false
			continue
		}
		out = append(out, abs)
	}
	return out, good
}

func (p *parser) strings(field string, raw json.RawMessage) ([]string, bool) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || isNull(raw) {
		p.addf(field, "got %s, want a list of strings", describe(raw))
		return nil, false
	}
	out := make([]string, 0, len(items))
	good := true
	for i, item := range items {
		s, ok := p.str(fmt.Sprintf("%s[%d]", field, i), item)
		if ok && strings.TrimSpace(s) == "" {
			p.addf(fmt.Sprintf("%s[%d]", field, i), "is empty")
			ok = false
		}
		good = good && ok
		out = append(out, s)
	}
	return out, good
}

// ruleID is the shape of a classifier rule id; checking it here catches typos in disabled_rules
// and rule_modes at delivery time. Whether the id exists is the classifier's to say.
var ruleID = lazyregexp.New(`^[a-z0-9][a-z0-9._-]{0,127}$`)

func (p *parser) ruleIDs(field string, raw json.RawMessage) []string {
	ids, ok := p.strings(field, raw)
	if !ok {
		return nil
	}
	for i, id := range ids {
		if !ruleID.MatchString(id) {
			p.addf(fmt.Sprintf("%s[%d]", field, i), "%q is not a rule id (lower-case letters, digits, '.', '_' and '-')", id)
		}
	}
	return ids
}

func (p *parser) policy(field string, raw json.RawMessage) {
	members, ok := p.object(field, raw)
	if !ok {
		return
	}
	pol := &p.cfg.Policy
	p.eachMember(field, members, map[string]func(string, json.RawMessage){
		"rules_dirs": func(f string, r json.RawMessage) {
			if dirs, ok := p.paths(f, r); ok {
				pol.RulesDirs = dirs
			}
		},
		"disabled_rules": func(f string, r json.RawMessage) { pol.DisabledRules = p.ruleIDs(f, r) },
		"rule_modes":     p.ruleModes,
		"allowed_executables": func(f string, r json.RawMessage) {
			if names, ok := p.bareNames(f, r, "a bare command name"); ok {
				pol.AllowedExecutables = names
			}
		},
		"allowed_agents": func(f string, r json.RawMessage) {
			if names, ok := p.bareNames(f, r, "an agent program's bare name"); ok {
				pol.AllowedAgents = names
			}
		},
		"trusted_sources": func(f string, r json.RawMessage) {
			items, ok := p.strings(f, r)
			if !ok {
				return
			}
			for i, it := range items {
				if strings.ContainsAny(it, " /\t") && !strings.HasPrefix(it, "mcp:") {
					p.addf(fmt.Sprintf("%s[%d]", f, i), "%q is not a host (docs.example.com covers its subdomains) or an MCP server (mcp:<name>)", it)
					return
				}
			}
			pol.TrustedSources = items
		},
		"allowed_mcp_servers": func(f string, r json.RawMessage) {
			if servers, ok := p.mcpServers(f, r); ok {
				pol.MCPServers, pol.RestrictMCPServers = servers, true
				pol.AllowedMCPServers = make([]string, len(servers))
				for i, s := range servers {
					pol.AllowedMCPServers[i] = s.Name
				}
			}
		},
		"quarantine_on_injection": func(f string, r json.RawMessage) { p.boolean(f, r, &pol.QuarantineOnInjection) },
	})
}

// mcpServers reads allowed_mcp_servers: each a name ("github"), or an object naming the server
// and what it starts, {"name", "command": [program, args...]} or {"name", "url"}, which is how
// lockdown lets Claude Code tell the admin's server from another of the same name.
func (p *parser) mcpServers(field string, raw json.RawMessage) ([]MCPServer, bool) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || isNull(raw) {
		p.addf(field, "got %s, want a list of server names or {\"name\", \"command\" | \"url\"} objects", describe(raw))
		return nil, false
	}
	out := make([]MCPServer, 0, len(items))
	good := true
	for i, item := range items {
		f := fmt.Sprintf("%s[%d]", field, i)
		var s MCPServer
		ok := true
		if t := bytes.TrimSpace(item); len(t) > 0 && t[0] == '{' {
			s, ok = p.mcpServer(f, item)
		} else {
			s.Name, ok = p.str(f, item)
		}
		if ok && strings.TrimSpace(s.Name) == "" {
			p.addf(f, "names no server")
			ok = false
		}
		good = good && ok
		out = append(out, s)
	}
	return out, good
}

func (p *parser) mcpServer(field string, raw json.RawMessage) (MCPServer, bool) {
	var s MCPServer
	members, ok := p.object(field, raw)
	if !ok {
		return s, false
	}
	seen := p.eachMember(field, members, map[string]func(string, json.RawMessage){
		"name": func(f string, r json.RawMessage) { s.Name, _ = p.str(f, r) },
		"command": func(f string, r json.RawMessage) {
			if c, ok := p.strings(f, r); ok && len(c) > 0 {
				s.Command = c
			} else if ok {
				p.addf(f, "is empty; give the program and its arguments")
			}
		},
		"url": func(f string, r json.RawMessage) { s.URL, _ = p.str(f, r) },
	})
	if seen["command"] && seen["url"] {
		p.addf(field, "gives both command and url; a server is one or the other")
		return s, false
	}
	return s, true
}

// bareNames reads a list of program names as a shell finds them on its PATH: what is no bare name
// (a slash, a space) is a problem naming what it should have been.
func (p *parser) bareNames(field string, raw json.RawMessage, what string) ([]string, bool) {
	names, ok := p.strings(field, raw)
	for i, n := range names {
		if strings.ContainsAny(n, "/ \t") {
			p.addf(fmt.Sprintf("%s[%d]", field, i), "%q is not %s (no slashes or spaces)", n, what)
			ok = false
		}
	}
	return names, ok
}

// claudeVersion is a Claude Code release number as requiredMinimumVersion takes it.
var claudeVersion = lazyregexp.New(`^[0-9]+\.[0-9]+\.[0-9]+$`)

func (p *parser) minimumVersion(field string, raw json.RawMessage) {
	s, ok := p.str(field, raw)
	if !ok {
		return
	}
	if !claudeVersion.MatchString(s) {
		p.addf(field, "%q is not a Claude Code version; write it like \"2.1.329\"", s)
		return
	}
	p.cfg.RequiredMinimumVersion = s
}

// mcpServerName is what Claude Code's managed allowedMcpServers accepts as a server name.
var mcpServerName = lazyregexp.New(`^[a-zA-Z0-9_-]+$`)

// HookEvents are the hook events of Claude Code's settings (the pinned release's schema; a test
// holds the two alike): allowed_settings may name one as "hooks.<event>".
var HookEvents = []string{"ConfigChange", "CwdChanged", "DirectoryAdded", "Elicitation", "ElicitationResult", "FileChanged",
	"InstructionsLoaded", "MessageDisplay", "Notification", "PermissionDenied", "PermissionRequest", "PostCompact",
	"PostToolBatch", "PostToolUse", "PostToolUseFailure", "PreCompact", "PreToolUse", "SessionEnd", "SessionStart", "Setup",
	"Stop", "StopFailure", "SubagentStart", "SubagentStop", "TaskCompleted", "TaskCreated", "TeammateIdle",
	"UserPromptExpansion", "UserPromptSubmit", "WorktreeCreate", "WorktreeRemove"}

// settingName is one name in allowed_settings: a settings key, or a key and one member of it.
var settingName = lazyregexp.New(`^[A-Za-z$][A-Za-z0-9_]*(\.[A-Za-z0-9_.:@/-]+)?$`)

func (p *parser) allowedSettings(field string, raw json.RawMessage) {
	names, ok := p.strings(field, raw)
	if !ok {
		return
	}
	for i, n := range names {
		f := fmt.Sprintf("%s[%d]", field, i)
		if !settingName.MatchString(n) {
			p.addf(f, "%q is not a settings name; use a key (\"statusLine\") or a key and one member (\"env.HTTPS_PROXY\", \"hooks.Stop\", \"mcpServers.github\")", n)
			ok = false
			continue
		}
		if event, isHook := strings.CutPrefix(n, "hooks."); isHook && !slices.Contains(HookEvents, event) {
			msg := fmt.Sprintf("%q names no hook event of Claude Code's", n)
			if near, found := spelling.Suggest(event, HookEvents); found {
				msg += fmt.Sprintf(" (did you mean \"hooks.%s\"?)", near)
			}
			p.addf(f, "%s", msg)
			ok = false
		}
	}
	if ok {
		p.cfg.AllowedSettings = names
	}
}

func (p *parser) ruleModes(field string, raw json.RawMessage) {
	members, ok := p.object(field, raw)
	if !ok {
		return
	}
	modes := make(map[string]Mode, len(members))
	for _, m := range members {
		f := field + "." + m.key
		if !ruleID.MatchString(m.key) {
			p.addf(f, "%q is not a rule id (lower-case letters, digits, '.', '_' and '-')", m.key)
			continue
		}
		var mode Mode
		p.mode(f, m.raw, &mode)
		if mode != "" {
			modes[m.key] = mode
		}
	}
	p.cfg.Policy.RuleModes = modes
}

func (p *parser) telemetry(field string, raw json.RawMessage) {
	members, ok := p.object(field, raw)
	if !ok {
		return
	}
	t := &p.cfg.Telemetry
	p.eachMember(field, members, map[string]func(string, json.RawMessage){
		"path": func(f string, r json.RawMessage) {
			s, ok := p.str(f, r)
			if !ok {
				return
			}
			abs, err := p.env.absPath(s)
			if err != nil {
				p.addf(f, "%v", err)
				return
			}
			t.Path = abs
		},
		"max_file_mb":       func(f string, r json.RawMessage) { p.intRange(f, r, &t.MaxFileMB, 1, maxFileMB) },
		"max_files":         func(f string, r json.RawMessage) { p.intRange(f, r, &t.MaxFiles, 1, maxFiles) },
		"retained_min_days": func(f string, r json.RawMessage) { p.intRange(f, r, &t.RetainedMinDays, 0, 3650) },
		"redact":            func(f string, r json.RawMessage) { p.boolean(f, r, &t.Redact) },
		"read_group": func(f string, r json.RawMessage) {
			s, ok := p.str(f, r)
			if !ok {
				return
			}
			if !groupName.MatchString(s) {
				p.addf(f, "%q is not a group name (letters, digits, _ . -; at most 32)", s)
				return
			}
			t.ReadGroup = s
		},
		"inputs": func(f string, r json.RawMessage) {
			s, ok := p.str(f, r)
			if !ok {
				return
			}
			switch s {
			case "all", "metadata", "none":
				t.Inputs = s
			default:
				p.addf(f, "%q is not a choice; use \"all\" (the input, redacted), \"metadata\" (its keys and size) or \"none\": what is logged of calls nothing objected to", s)
			}
		},
	})
}

// groupName is the shape of a Unix group's name; whether it exists is the daemon's to say.
var groupName = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_.-]{0,31}$`)

func (p *parser) logLevel(field string, raw json.RawMessage) {
	s, ok := p.str(field, raw)
	if !ok {
		return
	}
	levels := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}
	l, ok := levels[s]
	if !ok {
		p.addf(field, "%q is not a level; use debug, info, warn or error", s)
		return
	}
	p.cfg.LogLevel = l
}

func (p *parser) object(field string, raw json.RawMessage) ([]member, bool) {
	members, err := readObject(raw, false)
	if dup := (duplicateError{}); errors.As(err, &dup) {
		p.addf(field+"."+dup.key, "%v", err)
		return nil, false
	}
	if err != nil {
		p.addf(field, "%v", err)
		return nil, false
	}
	return members, true
}

type member struct {
	key string
	raw json.RawMessage
}

// readObject splits a JSON object into its members in file order. Unlike encoding/json it refuses
// duplicate keys (which one wins is a guess an admin should not have to make) and, at the top
// level, anything after the object.
func readObject(data []byte, top bool) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(data, dec, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("got %s, want a JSON object {...}", describe(bytes.TrimSpace(data)))
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(data, dec, err)
		}
		key := tok.(string) // inside an object, json.Decoder only yields string keys
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntaxError(data, dec, err)
		}
		if seen[key] {
			return nil, duplicateError{key}
		}
		seen[key] = true
		members = append(members, member{key: key, raw: raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxError(data, dec, err)
	}
	if top {
		end := dec.InputOffset()
		rest := bytes.TrimLeft(data[end:], " \t\r\n")
		if len(rest) > 0 {
			return nil, fmt.Errorf("unexpected data after the JSON object at %s", position(data, int64(len(data)-len(rest))))
		}
	}
	return members, nil
}

// duplicateError is a field written twice in one object.
type duplicateError struct{ key string }

func (e duplicateError) Error() string { return fmt.Sprintf("field %q appears twice; keep one", e.key) }

func syntaxError(data []byte, dec *json.Decoder, err error) error {
	if errors.Is(err, io.EOF) {
		return errors.New("the file ends before the JSON object is complete")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("not valid JSON at %s: %v", position(data, se.Offset), err)
	}
	return fmt.Errorf("not valid JSON at %s: %v", position(data, dec.InputOffset()), err)
}

// position turns a byte offset into the line:column an editor shows.
func position(data []byte, off int64) string {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d column %d", line, col)
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// describe names a JSON value for an error message: its kind, and the value itself when short.
func describe(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	kind := "a value"
	switch c := raw[0]; {
	case c == '"':
		kind = "string"
	case c == '{':
		return "an object"
	case c == '[':
		return "a list"
	case c == 't' || c == 'f':
		kind = "boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		kind = "number"
	}
	if len(raw) > 40 {
		return kind
	}
	return kind + " " + string(raw)
}
