package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/dropin"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/settingsschema"

	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
)

// Exit statuses of validate.
const (
	validateOK      = 0
	validateInvalid = 1
)

func cmdValidate(_ context.Context, args []string, sio stdio) int {
	fs := newFlags("validate", "[--console SETTINGS] [FILE]", "Checks a managed.json, or a configuration profile (.mobileconfig, XML or signed, each payload\n"+
		"of type com.coworkbridge.agent; .plist for managed preferences), and the whole policy it names (rule files, disabled_rules, rule_modes,\n"+
		"rules_dirs) and lists every problem with its file, line and what to do. Without FILE, the\n"+
		"managed.json this Mac uses. Nothing is written. Exit status: 0 valid, 1 invalid, 64 usage.", sio)
	console := fs.String("console", "", "check this file of Claude Code settings for the Claude.ai admin console against what FILE asks\nthe drop-in to carry (see console-settings)")
	if code, done := fs.parse(args); done {
		return code
	}
	if fs.NArg() > 1 {
		return fs.usageError("validate takes at most one file, got %d", fs.NArg())
	}
	if *console != "" {
		cfg, err := consoleConfig(fs.Arg(0))
		if err != nil {
			fmt.Fprintln(sio.err, "coworkbridge validate:", err)
			return validateInvalid
		}
		return validateConsole(*console, cfg, sio)
	}
	env, err := managedconfig.SystemEnv()
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge validate:", err)
		return validateInvalid
	}
	paths, err := env.Paths()
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge validate:", err)
		return validateInvalid
	}
	file := fs.Arg(0)
	if file == "" {
		inUse, err := env.ExistingConfig()
		switch {
		case err != nil: // the daemon reports config_invalid here, and keeps its last valid copy
			fmt.Fprintf(sio.out, "%s is invalid (1 problem):\n  %v\n%s\n", inUse, err, invalidConsequence(nil, paths))
			return validateInvalid
		case inUse == "":
			fmt.Fprintf(sio.err, "coworkbridge validate: no managed.json on this Mac (looked at %s), so coworkbridge is off; name a file to check one\n",
				strings.Join(env.ConfigCandidates(), ", "))
			return validateInvalid
		}
		file = inUse
	}
	if managedconfig.IsMobileconfig(file) {
		return validateProfile(file, env, paths, sio)
	}
	problems, cfg := policy.Validate(file, env, paths)
	if len(problems) > 0 {
		fmt.Fprintf(sio.out, "%s is invalid (%d problem%s):\n", file, len(problems), plural(len(problems)))
		for _, p := range problems {
			fmt.Fprintf(sio.out, "  %s\n", p)
		}
		data, _ := managedconfig.ReadSource(file) // bounded, and never a FIFO's blocking open
		fmt.Fprintln(sio.out, invalidConsequence(data, paths))
		return validateInvalid
	}
	state := configState(cfg)
	fmt.Fprintf(sio.out, "%s is valid: coworkbridge %s, %d rule folder%s.\n", file, state, len(cfg.Policy.RulesDirs), plural(len(cfg.Policy.RulesDirs)))
	explainLockdown(sio, cfg, thisMacs(env, file))
	warnReadGroup(sio, cfg)
	return validateOK
}

// warnReadGroup says when telemetry.read_group names no group of this machine: a Mac without it
// keeps the logs root's alone (the daemon says so too), which a typo makes happen everywhere.
func warnReadGroup(sio stdio, cfg managedconfig.Config) {
	g := cfg.Telemetry.ReadGroup
	if g == "" {
		return
	}
	if _, err := user.LookupGroup(g); err != nil {
		fmt.Fprintf(sio.out, "Warning: telemetry.read_group names %q, which is no group of this machine: where it is missing, the system daemon keeps the logs root's alone.\n", g)
	}
}

// validateProfile checks a configuration profile as the admin uploads it to the MDM: the
// profile as a whole, then each payload of coworkbridge's type as if it were managed.json.
func validateProfile(file string, env managedconfig.Env, paths managedconfig.Paths, sio stdio) int {
	mc, results, whole := policy.ValidateProfile(file, env, paths)
	if mc.Signed {
		fmt.Fprintf(sio.out, "%s is signed by %s (the signature is checked by each Mac that installs it, not here).\n",
			file, orUnnamed(mc.Signers))
	}
	problems := whole
	for _, r := range results {
		problems = append(problems, r.Problems...)
	}
	if len(problems) > 0 {
		fmt.Fprintf(sio.out, "%s is invalid (%d problem%s):\n", file, len(problems), plural(len(problems)))
		for _, p := range problems {
			fmt.Fprintf(sio.out, "  %s\n", p)
		}
		var payload []byte
		if len(results) > 0 {
			payload = results[0].Payload.JSON
		}
		fmt.Fprintln(sio.out, invalidConsequence(payload, paths))
		return validateInvalid
	}
	r := results[0]
	fmt.Fprintf(sio.out, "%s is valid: %s sets coworkbridge %s, %d rule folder%s.\n", file, r.Payload.Name(),
		configState(r.Config), len(r.Config.Policy.RulesDirs), plural(len(r.Config.Policy.RulesDirs)))
	if len(mc.Others) > 0 {
		fmt.Fprintf(sio.out, "Its other payloads (%s) are macOS's to check.\n", strings.Join(mc.Others, ", "))
	}
	explainLockdown(sio, r.Config, thisMacs(env, file))
	warnReadGroup(sio, r.Config)
	return validateOK
}

// serversByNameOnly are the allowed MCP servers given without a command or URL (Cowork's own
// aside, which the drop-in names itself).
func serversByNameOnly(p managedconfig.Policy) []string {
	var out []string
	if !p.RestrictMCPServers {
		return nil
	}
	for _, s := range p.Servers() {
		if len(s.Command) == 0 && s.URL == "" && !slices.Contains(dropin.CoworkServers, s.Name) {
			out = append(out, s.Name)
		}
	}
	return out
}

func orUnnamed(names []string) string {
	var named []string
	for _, n := range names {
		if n != "" {
			named = append(named, n)
		}
	}
	if len(named) == 0 {
		return "a certificate with no name"
	}
	return strings.Join(named, ", ")
}

func configState(cfg managedconfig.Config) string {
	if cfg.CoworkEnabled {
		return "on, mode " + string(cfg.Mode)
	}
	return "off (cowork_enabled is false)"
}

// thisMacs reports whether file is the configuration this Mac runs on: only then is this Mac's
// drop-in compared with it (a file checked before it ships says nothing of the workstation).
func thisMacs(env managedconfig.Env, file string) bool {
	inUse, err := env.ExistingConfig()
	if err != nil || inUse == "" {
		return false
	}
	a, errA := filepath.Abs(inUse)
	b, errB := filepath.Abs(file)
	return errA == nil && errB == nil && a == b
}

// explainLockdown says what the managed-settings drop-in does for cfg and, for the configuration
// this Mac runs on, whether the one installed is that drop-in, owned by root and safe.
func explainLockdown(sio stdio, cfg managedconfig.Config, installedHere bool) {
	if cfg.Lockdown {
		fmt.Fprintln(sio.out, "Lockdown: the drop-in stops every user, project and plugin hook (allowManagedHooksOnly),")
		fmt.Fprintln(sio.out, "  judges settings changes (ConfigChange) and every call itself; users lose their own hooks.")
	} else {
		fmt.Fprintln(sio.out, "No lockdown: the drop-in runs coworkbridge hook before every call; user hooks still run,")
		fmt.Fprintln(sio.out, "  and the daemon holds each session's settings to the allow-list.")
	}
	if len(cfg.AllowedSettings) > 0 {
		fmt.Fprintf(sio.out, "Session settings may also keep: %s.\n", strings.Join(cfg.AllowedSettings, ", "))
	}
	if byName := serversByNameOnly(cfg.Policy); cfg.Lockdown && len(byName) > 0 {
		fmt.Fprintf(sio.out, "Warning: policy.allowed_mcp_servers names %s by name only: under lockdown Claude Code admits a server of that\n", strings.Join(byName, ", "))
		fmt.Fprintln(sio.out, "  name whatever it starts, so one the agent defines runs its own program. Give each its \"command\" (or \"url\").")
	}
	if cfg.Policy.RestrictMCPServers {
		fmt.Fprintln(sio.out, "An MCP server's definition keeps in its env only variables named for it (\"mcpServers.NAME.env.VAR\"), never PATH,")
		fmt.Fprintln(sio.out, "  NODE_OPTIONS, LD_*, DYLD_*, PYTHON* or their kin: Claude Code compares an allowed command without its env.")
	}
	if !installedHere {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	if found, err := filepath.EvalSymlinks(exe); err == nil {
		exe = found
	}
	sc, err := settingsschema.New()
	if err != nil {
		return
	}
	want, err := dropin.Content(dropin.Hook{Exe: exe}, cfg, sc)
	if err != nil {
		fmt.Fprintf(sio.out, "The drop-in for this file cannot be built: %v\n", err)
		return
	}
	dir := dropin.Dir(runtime.GOOS)
	probs, system := dropin.Check(dir, want), false
	if sys, err := dropin.Content(dropin.Hook{Exe: exe, System: true}, cfg, sc); err == nil && len(dropin.Check(dir, sys)) == 0 {
		probs, system = nil, true // the system-mode drop-in (install --system)
	}
	if len(probs) == 0 {
		if err := dropin.CheckProgram(dropin.Hook{Exe: exe, System: system}); err != nil {
			fmt.Fprintf(sio.out, "%s: %v\n", health.CodeManagedSettings, err)
			return
		}
		fmt.Fprintf(sio.out, "The installed drop-in (%s) is the one this file asks for.\n", filepath.Join(dir, dropin.Name))
		return
	}
	fmt.Fprintf(sio.out, "%s: %v\n", health.CodeManagedSettings, errors.Join(probs...))
}

// counted is n with the noun that fits it: 1 ask, 2 asks, 0 asks.
func counted[N ~int | ~int64 | ~uint64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprint(n) + " " + many
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// invalidConsequence says what a daemon on this Mac does with an invalid file: that depends on
// whether it has a last good copy, and on what the broken file asks for.
func invalidConsequence(data []byte, paths managedconfig.Paths) string {
	if _, err := os.Stat(paths.LastGoodFile()); err == nil {
		return "A daemon on this Mac given this file keeps running on its last valid copy (" + paths.LastGoodFile() + "): an invalid file never takes effect in part."
	}
	if managedconfig.IntentOf(data) == managedconfig.Enforce {
		return "This Mac has no last valid copy: a daemon given this file, which asks for enforce, fails closed and denies every tool call in every session until a valid file arrives (status exits 3)."
	}
	return "This Mac has no last valid copy: a daemon given this file is off until a valid file arrives (hooks already in sessions stay)."
}
