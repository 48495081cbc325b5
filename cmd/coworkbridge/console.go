package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/coworkbridge/coworkbridge/dropin"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
	"github.com/coworkbridge/coworkbridge/settingsschema"
)

// Where an organisation sets Claude Code settings in the Claude.ai admin console, a CLI that has
// them does not use the MDM drop-in at all: console-settings prints what the console must carry
// instead, and validate --console checks what the admin pasted.

func cmdConsoleSettings(_ context.Context, args []string, sio stdio) int {
	fs := newFlags("console-settings", "[--config FILE] [--exe PATH] [--system]",
		"Prints, as JSON, the managed settings to merge into the organisation's Claude Code settings in the\n"+
			"Claude.ai admin console (Admin Settings > Claude Code > Managed settings): coworkbridge's hook in exec\n"+
			"form with onFailure \"block\" and, under lockdown, the restrictions the drop-in carries. Where the\n"+
			"console's settings reach a Claude Code, the MDM drop-in is not used at all. What the console cannot\n"+
			"carry, and what carrying it costs, is printed on stderr. Check the merged result with\n"+
			"'coworkbridge validate --console FILE'.", sio)
	config := fs.String("config", "", "the managed.json whose drop-in to print (default: the one this Mac uses)")
	exe := fs.String("exe", managedconfig.MacExecutable, "the coworkbridge program on every computer the console reaches")
	system := fs.Bool("system", false, "system mode's hook program (coworkbridge-hook beside --exe)")
	if code, done := fs.parse(args); done {
		return code
	}
	if code, done := fs.noArgs(); done {
		return code
	}
	if !filepath.IsAbs(*exe) {
		return fs.usageError("--exe %q: want the absolute path coworkbridge is installed at", *exe)
	}
	cfg, err := consoleConfig(*config)
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge console-settings:", err)
		return exitFail
	}
	sc, err := settingsschema.New()
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge console-settings:", err)
		return exitFail
	}
	data, notes, err := dropin.Console(dropin.Hook{Exe: *exe, System: *system}, cfg, sc)
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge console-settings:", err)
		return exitFail
	}
	sio.out.Write(data)
	for _, n := range notes {
		fmt.Fprintln(sio.err, "note:", n)
	}
	return exitOK
}

// consoleConfig is the configuration of file, or of the managed.json this Mac uses.
func consoleConfig(file string) (managedconfig.Config, error) {
	env, err := managedconfig.SystemEnv()
	if err != nil {
		return managedconfig.Config{}, err
	}
	paths, err := env.Paths()
	if err != nil {
		return managedconfig.Config{}, err
	}
	if file == "" {
		if file, err = env.ExistingConfig(); err != nil {
			return managedconfig.Config{}, err
		} else if file == "" {
			return managedconfig.Config{}, fmt.Errorf("no managed.json on this Mac (looked at %s); name one with --config", strings.Join(env.ConfigCandidates(), ", "))
		}
	}
	problems, cfg := policy.Validate(file, env, paths)
	if len(problems) > 0 {
		return cfg, fmt.Errorf("%s is invalid (run 'coworkbridge validate %s'): %s", file, file, problems[0])
	}
	return cfg, nil
}

// validateConsole checks the console settings in file against what cfg asks the drop-in to carry,
// for the coworkbridge program their PreToolUse hook names.
func validateConsole(file string, cfg managedconfig.Config, sio stdio) int {
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge validate:", err)
		return validateInvalid
	}
	sc, err := settingsschema.New()
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge validate:", err)
		return validateInvalid
	}
	h, found := dropin.ConsoleHook(data)
	if !found {
		fmt.Fprintf(sio.out, "%s is invalid: no hooks.PreToolUse hook runs coworkbridge (or coworkbridge-hook); 'coworkbridge console-settings' prints the one to merge in.\n", file)
		return validateInvalid
	}
	want, err := dropin.Content(h, cfg, sc)
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge validate:", err)
		return validateInvalid
	}
	if probs := dropin.CheckConsole(data, want, sc); len(probs) > 0 {
		fmt.Fprintf(sio.out, "%s is invalid (%d problem%s):\n", file, len(probs), plural(len(probs)))
		for _, p := range probs {
			fmt.Fprintf(sio.out, "  %s\n", strings.TrimPrefix(p.Error(), dropin.ErrConsole.Error()+": "))
		}
		fmt.Fprintln(sio.out, "Where these settings reach a Claude Code, the MDM drop-in is not used: coworkbridge is not in force there as managed.json asks.")
		return validateInvalid
	}
	state := "without lockdown"
	if cfg.Lockdown {
		state = "with lockdown"
	}
	fmt.Fprintf(sio.out, "%s carries coworkbridge's hook (%s) %s, as managed.json asks.\n", file, h.Program(), state)
	return validateOK
}
