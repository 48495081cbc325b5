package main

import (
	"context"
	"errors"
	"fmt"
	"os"
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
		if file = locateConfig(env); file == "" {
			fmt.Fprintf(sio.err, "coworkbridge validate: no managed.json on this Mac (looked at %s), so coworkbridge is off; name a file to check one\n",
				strings.Join(env.ConfigCandidates(), ", "))
			return validateInvalid
		}
	}
	problems, cfg := validateFile(file, env, paths)
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

// locateConfig is the managed.json this Mac uses, "" when none exists.
func locateConfig(env managedconfig.Env) string {
	for _, c := range env.ConfigCandidates() {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	return ""
}

// validateFile checks one managed.json and, when it parses, the policy it names. Each problem is
// one line: where (file:line) and what is wrong, with what to do.
func validateFile(file string, env managedconfig.Env, paths managedconfig.Paths) ([]string, managedconfig.Config) {
	// A profile is checked in its JSON form, whose lines are not the property list's: its
	// problems name fields only.
	data, err := managedconfig.ReadSource(file)
	if err != nil {
		return []string{err.Error()}, managedconfig.Config{}
	}
	cfg, err := managedconfig.Parse(data, file, env, paths)
	var inv *managedconfig.InvalidError
	if errors.As(err, &inv) {
		var out []string
		for _, p := range inv.Problems {
			where := file
			if line := managedconfig.FieldLine(data, p.Field); line > 0 && !managedconfig.IsProfile(file) {
				where = fmt.Sprintf("%s:%d", file, line)
			}
			out = append(out, where+": "+p.String())
		}
		return out, cfg
	}
	if err != nil {
		return []string{err.Error()}, cfg
	}
	if _, err := policy.Compile(cfg.Policy); err != nil { // a missing rules folder included
		return policyProblems(err, file, data), cfg
	}
	return nil, cfg
}

// policyProblems splits a policy's joined errors into lines; those about managed.json's own fields
// get its line.
func policyProblems(err error, file string, data []byte) []string {
	var out []string
	for _, e := range flatten(err) {
		msg := e.Error()
		if field, _, ok := strings.Cut(msg, " "); ok && strings.HasPrefix(field, "policy.") {
			field = strings.TrimSuffix(field, ":")
			if line := managedconfig.FieldLine(data, field); line > 0 && !managedconfig.IsProfile(file) {
				msg = fmt.Sprintf("%s:%d: %s", file, line, msg)
			}
		}
		out = append(out, msg)
	}
	return out
}

// flatten lists the errors joined (at any depth) in err.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}
