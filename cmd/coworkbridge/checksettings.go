package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/coworkbridge/coworkbridge/allowlist"
	"github.com/coworkbridge/coworkbridge/dropin"
	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/injector"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
)

// maxCheckedSettings bounds the settings file check reads, as the daemon bounds a session's.
const maxCheckedSettings = 4 << 20

// checkSettings shows an admin what the configuration in force does with a settings file: what
// the allow-list would hold in a session, which of it quarantines the session, and what the
// lockdown drop-in's ConfigChange hook would do with the change.
func checkSettings(file string, asJSON bool, sio stdio) int {
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		return checkConfigFolder(file, asJSON, sio)
	}
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge check:", err)
		return exitFail
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCheckedSettings+1))
	f.Close()
	if err == nil && len(data) > maxCheckedSettings {
		err = fmt.Errorf("%s is larger than %d bytes; the daemon would set it aside whole", file, maxCheckedSettings)
	}
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge check:", err)
		return exitFail
	}
	s, err := configInForce()
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge check:", err)
		return exitFail
	}
	held, attempts, err := hookentry.Judge(data, allowlist.New(s.Config.AllowedSettings))
	if err != nil {
		fmt.Fprintf(sio.err, "coworkbridge check: %s: %v\n", file, err)
		return exitFail
	}
	if asJSON {
		json.NewEncoder(sio.out).Encode(map[string]any{"config": s.Path, "lockdown": s.Config.Lockdown,
			"allowed_settings": s.Config.AllowedSettings, "held": orEmpty(held), "attempts": orEmpty(attempts),
			"kept": orEmpty(keptNames(data, held))})
		return heldExit(held)
	}
	if s.Path == "" {
		fmt.Fprintln(sio.out, "config:   none found: the defaults (nothing allowed beyond the safe list, no lockdown)")
	} else {
		fmt.Fprintf(sio.out, "config:   %s (%s)\n", s.Path, s.Origin)
	}
	for _, k := range keptNames(data, held) {
		fmt.Fprintf(sio.out, "kept:     %s\n", k)
	}
	printHeld(sio.out, held, attempts, heldWords{
		none:    "nothing; every key stays (safe list or allowed_settings)",
		unknown: "not on the safe list: kept aside and reported",
		attempt: "can start a program, redirect the CLI or switch hooks off: kept aside, and the session quarantined",
	})
	_, installed := os.Stat(filepath.Join(dropin.Dir(runtime.GOOS), dropin.Name))
	switch {
	case s.Config.Lockdown && installed != nil:
		fmt.Fprintf(sio.out, "lockdown: on in managed.json, but this Mac has no drop-in (%s): nothing blocks this change from loading until 'sudo coworkbridge install --managed-settings' runs\n", dropin.Dir(runtime.GOOS))
	case s.Config.Lockdown && len(attempts) > 0:
		fmt.Fprintln(sio.out, "lockdown: on; written mid-session, this change is blocked from loading by the managed ConfigChange hook in enforce (recorded in observe), and no user or project hook runs anyway")
	case s.Config.Lockdown:
		fmt.Fprintln(sio.out, "lockdown: on; the managed ConfigChange hook lets this change load")
	default:
		fmt.Fprintln(sio.out, "lockdown: off; the daemon takes held keys out of the session's files as soon as they are written")
	}
	return heldExit(held)
}

// exitHeld is check --settings' status when something would be held: a script can tell a file
// that passes whole from one that does not.
const exitHeld = 2

func heldExit(held []string) int {
	if len(held) > 0 {
		return exitHeld
	}
	return exitOK
}

// keptNames are the keys (and members of env, hooks and mcpServers) of a settings document that
// nothing holds, in file order.
func keptNames(data []byte, held []string) []string {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return nil
	}
	var kept []string
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if k != "env" && k != "hooks" && k != "mcpServers" {
			if !slices.Contains(held, k) {
				kept = append(kept, k)
			}
			continue
		}
		var members map[string]json.RawMessage
		json.Unmarshal(top[k], &members)
		for _, m := range slices.Sorted(maps.Keys(members)) {
			if n := k + "." + m; !slices.Contains(held, n) && !slices.Contains(held, k) {
				kept = append(kept, n)
			}
		}
	}
	return kept
}

// checkConfigFolder shows what the daemon would hold of a configuration folder: a .claude folder,
// or a session or project folder holding .claude (and outputs/.claude). Nothing is changed.
func checkConfigFolder(dir string, asJSON bool, sio stdio) int {
	root, levels := dir, []string{session.ClaudeDir, "outputs/" + session.ClaudeDir}
	if filepath.Base(filepath.Clean(dir)) == session.ClaudeDir {
		root, levels = filepath.Dir(filepath.Clean(dir)), []string{session.ClaudeDir}
	}
	cs, err := configInForce()
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge check:", err)
		return exitFail
	}
	s, err := session.Open(root)
	if err != nil {
		fmt.Fprintf(sio.err, "coworkbridge check: open %s: %v\n", root, err)
		return exitFail
	}
	defer s.Close()
	held, attempts, err := injector.JudgeSurface(s, levels, allowlist.New(cs.Config.AllowedSettings))
	if err != nil {
		fmt.Fprintf(sio.err, "coworkbridge check: %s: %v\n", dir, err)
		return exitFail
	}
	if asJSON {
		json.NewEncoder(sio.out).Encode(map[string]any{"config": cs.Path, "folder": dir,
			"allowed_settings": cs.Config.AllowedSettings, "held": orEmpty(held), "attempts": orEmpty(attempts)})
		return heldExit(held)
	}
	fmt.Fprintf(sio.out, "folder:   %s (skills, agents, commands, output styles, plugins, workflows, routines, launch.json)\n", dir)
	printHeld(sio.out, held, attempts, heldWords{
		none:    "nothing; everything there starts nothing, or allowed_settings names it",
		unknown: "not known to be harmless: moved aside or cut out, and reported",
		attempt: "can start a program, run a hook or loosen permissions: held, and the session quarantined",
	})
	return heldExit(held)
}

// heldWords say what holding means, for a settings file or a configuration folder.
type heldWords struct{ none, unknown, attempt string }

// printHeld lists what would be held, each with why: an attempt, or merely not known.
func printHeld(w io.Writer, held, attempts []string, words heldWords) {
	if len(held) == 0 {
		fmt.Fprintln(w, "held:     "+words.none)
	}
	for _, h := range held {
		why := words.unknown
		if slices.Contains(attempts, h) {
			why = words.attempt
		}
		fmt.Fprintf(w, "held:     %s (%s)\n", h, why)
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// machineConfig loads managed.json as this machine has it (the file, its last good copy, or the
// defaults), invalid or not.
func machineConfig() (managedconfig.Snapshot, error) {
	env, err := managedconfig.SystemEnv()
	if err != nil {
		return managedconfig.Snapshot{}, err
	}
	paths, err := env.Paths()
	if err != nil {
		return managedconfig.Snapshot{}, err
	}
	return managedconfig.NewLoader(env, paths).Load(), nil
}

// configInForce is the configuration the daemon runs on: the file, or its last good copy.
func configInForce() (managedconfig.Snapshot, error) {
	s, err := machineConfig()
	if err != nil {
		return s, err
	}
	if s.Origin == managedconfig.OriginInvalid {
		return s, fmt.Errorf("%v\nwhat to do: fix the file ('coworkbridge validate %s' lists every problem)", s.Problem, s.Path)
	}
	return s, nil
}
