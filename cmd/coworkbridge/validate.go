package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
)

// Exit statuses of validate.
const (
	validateOK      = 0
	validateInvalid = 1
)

func cmdValidate(_ context.Context, args []string, sio stdio) int {
	fs := newFlags("validate", "[FILE]", "Checks a managed.json and the whole policy it names (rule files, disabled_rules, rule_modes,\n"+
		"rules_dirs) and lists every problem with its file, line and what to do. Without FILE, the\n"+
		"managed.json this Mac uses. Nothing is written. Exit status: 0 valid, 1 invalid, 64 usage.", sio)
	if code, done := fs.parse(args); done {
		return code
	}
	if fs.NArg() > 1 {
		return fs.usageError("validate takes at most one file, got %d", fs.NArg())
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
		if file = env.ExistingConfig(); file == "" {
			fmt.Fprintf(sio.err, "coworkbridge validate: no managed.json on this Mac (looked at %s), so coworkbridge is off; name a file to check one\n",
				strings.Join(env.ConfigCandidates(), ", "))
			return validateInvalid
		}
	}
	problems, cfg := policy.Validate(file, env, paths)
	if len(problems) > 0 {
		fmt.Fprintf(sio.out, "%s is invalid (%d problem%s):\n", file, len(problems), plural(len(problems)))
		for _, p := range problems {
			fmt.Fprintf(sio.out, "  %s\n", p)
		}
		fmt.Fprintln(sio.out, "A daemon given this file keeps running on the last valid one (an invalid file never takes effect in part).")
		return validateInvalid
	}
	state := "off (cowork_enabled is false)"
	if cfg.CoworkEnabled {
		state = "on, mode " + string(cfg.Mode)
	}
	fmt.Fprintf(sio.out, "%s is valid: coworkbridge %s, %d rule folder%s.\n", file, state, len(cfg.Policy.RulesDirs), plural(len(cfg.Policy.RulesDirs)))
	return validateOK
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
