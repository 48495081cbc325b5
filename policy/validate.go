package policy

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// Validate checks the managed configuration in file (managed.json or a profile's plist) and
// the policy it names. Each problem is one line: where (file:line, when the field's line can be
// found) and what is wrong, with what to do. Nothing is written.
func Validate(file string, env managedconfig.Env, paths managedconfig.Paths) ([]string, managedconfig.Config) {
	data, line, err := managedconfig.ReadSourceLines(file)
	if err != nil {
		return []string{err.Error()}, managedconfig.Config{}
	}
	return check(data, file, line, env, paths)
}

// PayloadResult is the check of one payload of a configuration profile.
type PayloadResult struct {
	Payload  managedconfig.ProfilePayload
	Problems []string
	Config   managedconfig.Config
}

// ValidateProfile checks every payload of coworkbridge's type in a configuration profile as an
// MDM takes it (a .mobileconfig, XML or signed). Problems of the profile as a whole (not a
// profile, no payload of ours, two of them) come apart from those of each payload.
func ValidateProfile(file string, env managedconfig.Env, paths managedconfig.Paths) (managedconfig.Mobileconfig, []PayloadResult, []string) {
	mc, err := managedconfig.ReadMobileconfigFile(file)
	if err != nil {
		return mc, nil, []string{file + ": " + err.Error()}
	}
	var whole []string
	switch len(mc.Payloads) {
	case 0:
		whole = append(whole, fmt.Sprintf("%s: no payload of type %s, so a Mac given this profile keeps coworkbridge off (payload types found: %s); add one with the keys of managed.json",
			file, managedconfig.ProfileDomain, strings.Join(orNone(mc.Others), ", ")))
	case 1:
	default:
		whole = append(whole, fmt.Sprintf("%s: %d payloads of type %s; macOS merges them in no set order, so keep one", file, len(mc.Payloads), managedconfig.ProfileDomain))
	}
	var results []PayloadResult
	for _, p := range mc.Payloads {
		at := func(field string) string {
			if n := p.Line(field); n > 0 {
				return fmt.Sprintf("%s:%d", file, n)
			}
			return file
		}
		probs, cfg := check(p.JSON, file, func(field string) int { return p.Line(field) }, env, paths)
		var out []string
		for _, vp := range p.ValueProblems { // a date or data value, written as null for the check
			out = append(out, at(vp.Field)+": "+p.Name()+": "+vp.String())
		}
		for _, pr := range probs {
			// check begins with file:line when it knows the line; the payload comes after it.
			loc, rest := at(""), pr
			if l, r, ok := strings.Cut(pr, ": "); ok && strings.HasPrefix(l, file) {
				loc, rest = l, r
			}
			if slices.ContainsFunc(p.ValueProblems, func(vp managedconfig.Problem) bool { return strings.HasPrefix(rest, vp.Field+": ") }) {
				continue // the null standing for a date: said above, in its own words
			}
			out = append(out, loc+": "+p.Name()+": "+rest)
		}
		sortByLine(out, file)
		results = append(results, PayloadResult{Payload: p, Problems: out, Config: cfg})
	}
	return mc, results, whole
}

// sortByLine orders problems that begin with file:line by their line, those with none first, as
// an admin reads the file.
func sortByLine(probs []string, file string) {
	lineOf := func(p string) int {
		rest, ok := strings.CutPrefix(p, file+":")
		if !ok {
			return 0
		}
		digits, _, _ := strings.Cut(rest, ":")
		n, _ := strconv.Atoi(digits)
		return n
	}
	slices.SortStableFunc(probs, func(a, b string) int { return lineOf(a) - lineOf(b) })
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"none"}
	}
	return s
}

// check validates the JSON form of one configuration; line finds a field's line in the file.
func check(data []byte, file string, line func(string) int, env managedconfig.Env, paths managedconfig.Paths) ([]string, managedconfig.Config) {
	where := func(field string) string {
		if n := line(field); n > 0 {
			return fmt.Sprintf("%s:%d", file, n)
		}
		return file
	}
	cfg, err := managedconfig.Parse(data, file, env, paths)
	var inv *managedconfig.InvalidError
	if errors.As(err, &inv) {
		var out []string
		for _, p := range inv.Problems {
			out = append(out, where(p.Field)+": "+p.String())
		}
		// The fields that parsed still name rules: an unknown one is said now, not in the
		// next round once the rest is fixed.
		if _, perr := Compile(inv.Partial); perr != nil {
			out = append(out, problemLines(perr, file, where)...)
		}
		return inLineOrder(out, file), cfg
	}
	if err != nil {
		return []string{err.Error()}, cfg
	}
	if _, err := Compile(cfg.Policy); err != nil { // a missing rules folder included
		return problemLines(err, file, where), cfg
	}
	return nil, cfg
}

// inLineOrder sorts problems by the line of file they name ("file:12: ..."), those that name none
// last, each group in the order found: an admin fixes the file from the top.
func inLineOrder(problems []string, file string) []string {
	lineOf := func(p string) int {
		rest, ok := strings.CutPrefix(p, file+":")
		if !ok {
			return math.MaxInt
		}
		digits, _, _ := strings.Cut(rest, ":")
		n, err := strconv.Atoi(digits)
		if err != nil {
			return math.MaxInt
		}
		return n
	}
	slices.SortStableFunc(problems, func(a, b string) int { return cmp.Compare(lineOf(a), lineOf(b)) })
	return problems
}

// problemLines splits a policy's joined errors into lines; those about managed.json's own fields
// get its line.
func problemLines(err error, file string, where func(string) string) []string {
	var out []string
	for _, e := range flatten(err) {
		msg := e.Error()
		if field, _, ok := strings.Cut(msg, " "); ok && (strings.HasPrefix(field, "policy.") || strings.HasPrefix(field, "block_message.")) {
			if w := where(strings.TrimSuffix(field, ":")); w != file {
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

// CandidateInUse is Candidate with the configuration named as Used names it (origin "file").
func CandidateInUse(file string, env managedconfig.Env, paths managedconfig.Paths) (InUse, error) {
	problems, cfg := Validate(file, env, paths)
	if len(problems) > 0 {
		return InUse{}, fmt.Errorf("the candidate %s is invalid:\n  %s\nwhat to do: fix it ('coworkbridge validate %s' says the same)", file, strings.Join(problems, "\n  "), file)
	}
	c, err := Compile(cfg.Policy)
	if err != nil {
		return InUse{}, err
	}
	data, _, _ := managedconfig.ReadSourceLines(file)
	return InUse{Classifier: c, Path: file, Origin: managedconfig.OriginFile, Hash: managedconfig.Snapshot{Hash: managedconfig.HashOf(data)}.ShortHash(), Policy: cfg.Policy, Mode: cfg.Mode, Enabled: cfg.CoworkEnabled}, nil
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
	// Mode is the configuration's mode, which rules with no mode of their own follow.
	Mode managedconfig.Mode
	// Enabled is cowork_enabled: when false the rules judge nothing.
	Enabled bool
}

// Used is InForce with the configuration it came from named.
func Used(env managedconfig.Env, paths managedconfig.Paths) (InUse, error) {
	s := managedconfig.NewLoader(env, paths).Load()
	sysNote := ""
	if s.Origin == managedconfig.OriginInvalid && !env.System {
		s, sysNote = systemLastGood(env, s)
	}
	u := InUse{Path: s.Path, Origin: s.Origin, Hash: s.ShortHash(), Policy: s.Config.Policy, Mode: s.Config.Mode, Enabled: s.Config.CoworkEnabled}
	switch s.Origin {
	case managedconfig.OriginInvalid:
		return u, fmt.Errorf("%v\nwhat to do: fix the file ('coworkbridge validate %s' lists every problem)%s", s.Problem, s.Path, sysNote)
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

// systemLastGood is, for a user's broken managed.json, the last good copy a system-mode daemon
// runs on, when this process can read it; otherwise s, with a note saying how to judge with it
// when only root can.
func systemLastGood(env managedconfig.Env, s managedconfig.Snapshot) (managedconfig.Snapshot, string) {
	sys := env
	sys.System = true
	paths, err := sys.Paths()
	if err != nil {
		return s, ""
	}
	switch _, err := os.Stat(paths.LastGoodFile()); {
	case errors.Is(err, fs.ErrPermission):
		return s, fmt.Sprintf("\nthe system daemon runs on its last good copy (%s), which only root can read: run the command with sudo to judge with it", paths.LastGoodFile())
	case err != nil:
		return s, ""
	}
	if got := managedconfig.NewLoader(sys, paths).Load(); got.Origin == managedconfig.OriginLastGood {
		return got, ""
	}
	return s, ""
}

// Unrestrained compiles p with every rule on and in enforce: what the policy would decide had
// the admin switched nothing off, to say which rule a call would have met.
func Unrestrained(p managedconfig.Policy) (*classifier.Classifier, error) {
	p.DisabledRules, p.RuleModes = nil, nil
	return Compile(p)
}
