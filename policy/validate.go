package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// Validate checks the managed configuration in file (managed.json or a profile's plist) and,
// when it parses, the policy it names. Each problem is one line: where (file:line, when the
// field's line can be found) and what is wrong, with what to do. Nothing is written.
func Validate(file string, env managedconfig.Env, paths managedconfig.Paths) ([]string, managedconfig.Config) {
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
			out = append(out, where(file, data, p.Field)+": "+p.String())
		}
		return out, cfg
	}
	if err != nil {
		return []string{err.Error()}, cfg
	}
	if _, err := Compile(cfg.Policy); err != nil { // a missing rules folder included
		return problemLines(err, file, data), cfg
	}
	return nil, cfg
}

// where is file:line for field, or file alone when the line is unknown.
func where(file string, data []byte, field string) string {
	if line := managedconfig.FieldLine(data, field); line > 0 && !managedconfig.IsProfile(file) {
		return fmt.Sprintf("%s:%d", file, line)
	}
	return file
}

// problemLines splits a policy's joined errors into lines; those about managed.json's own fields
// get its line.
func problemLines(err error, file string, data []byte) []string {
	var out []string
	for _, e := range flatten(err) {
		msg := e.Error()
		if field, _, ok := strings.Cut(msg, " "); ok && strings.HasPrefix(field, "policy.") {
			if w := where(file, data, strings.TrimSuffix(field, ":")); w != file {
				msg = w + ": " + msg
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

// Candidate compiles the policy of a candidate managed configuration, or reports every problem
// Validate finds in it.
func Candidate(file string, env managedconfig.Env, paths managedconfig.Paths) (*classifier.Classifier, error) {
	problems, cfg := Validate(file, env, paths)
	if len(problems) > 0 {
		return nil, fmt.Errorf("the candidate %s is invalid:\n  %s\nwhat to do: fix it ('coworkbridge validate %s' says the same)", file, strings.Join(problems, "\n  "), file)
	}
	return Compile(cfg.Policy)
}

// InForce compiles the policy the user's daemon runs: managed.json's, the last good copy's when
// the file is invalid (note says so), the built-in rules when there is no file. An invalid file
// with no good copy is an error: judging with rules the daemon does not run would mislead. It
// reads, never writes, the last good copy.
func InForce(env managedconfig.Env, paths managedconfig.Paths) (c *classifier.Classifier, note string, err error) {
	u, err := Used(env, paths)
	return u.Classifier, u.Note, err
}

// InUse is the policy the daemon runs, and where it comes from.
type InUse struct {
	Classifier *classifier.Classifier
	// Note says what is unusual about it (the last good copy, a policy that compiled in part).
	Note string
	// Path, Origin and Hash name the configuration, as decision-log records do (config_hash).
	Path   string
	Origin managedconfig.Origin
	Hash   string
	// Policy is the configuration's policy section, for explaining what it switched off.
	Policy managedconfig.Policy
}

// Used is InForce with the configuration it came from named.
func Used(env managedconfig.Env, paths managedconfig.Paths) (InUse, error) {
	s := managedconfig.NewLoader(env, paths).Load()
	u := InUse{Path: s.Path, Origin: s.Origin, Hash: s.ShortHash(), Policy: s.Config.Policy}
	switch s.Origin {
	case managedconfig.OriginInvalid:
		return u, fmt.Errorf("%v\nwhat to do: fix the file ('coworkbridge validate %s' lists every problem)", s.Problem, s.Path)
	case managedconfig.OriginLastGood:
		u.Note = fmt.Sprintf("%s is invalid; checking with the last good copy the daemon runs on (%v)", s.Path, s.Problem)
	}
	c, err := Compile(s.Config.Policy)
	if err != nil && c != nil {
		u.Classifier, u.Note = c, strings.TrimSpace(u.Note+"\nthe policy of "+s.Path+" is incomplete: "+err.Error())
		return u, nil
	}
	if err != nil {
		return u, fmt.Errorf("the policy of %s does not compile:\n%v\nwhat to do: fix it ('coworkbridge validate' lists every problem)", s.Path, err)
	}
	u.Classifier = c
	return u, nil
}

// Unrestrained compiles p with every rule on and in enforce: what the policy would decide had
// the admin switched nothing off, to say which rule a call would have met.
func Unrestrained(p managedconfig.Policy) (*classifier.Classifier, error) {
	p.DisabledRules, p.RuleModes = nil, nil
	return Compile(p)
}
