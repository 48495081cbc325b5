// Package policy turns the policy a managed configuration names (rule folders, disabled rules,
// rule modes, allowed programs and servers) into a classifier, and keeps the last one that
// compiled, so that a broken change never leaves the daemon without rules. The daemon, the host
// hook, check and validate all compile through it, so they agree.
//
// It does not read managed.json (managedconfig does), judge calls (classifier does), or log and
// report: it says what it put in force and why, and its caller tells the admin.
package policy

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/internal/spelling"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
)

// Compile builds the classifier of p. A rules folder that is missing is an error returned
// with a classifier all the same (the rest of the policy stands); any other problem returns no
// classifier.
func Compile(p managedconfig.Policy) (*classifier.Classifier, error) {
	files, lerr := classifier.LoadRuleDirs(p.RulesDirs)
	modes := map[string]string{}
	for id, m := range p.RuleModes {
		modes[id] = string(m)
	}
	c, err := classifier.New(classifier.Policy{
		RuleFiles: files, DisabledRules: p.DisabledRules, RuleModes: modes,
		AllowedExecutables: p.AllowedExecutables, AllowedMCPServers: p.AllowedMCPServers, RestrictMCPServers: p.RestrictMCPServers,
		AllowedAgents: p.AllowedAgents, TrustedSources: p.TrustedSources,
		Places: places(p.Places),
	})
	if err != nil {
		return nil, errors.Join(lerr, err)
	}
	if err := noticeRules(c, p.Notices); err != nil {
		return nil, errors.Join(lerr, err)
	}
	return c, lerr
}

// places hands the map of the Mac to the classifier; the two packages name owners alike.
func places(ps []managedconfig.Place) []classifier.Place {
	out := make([]classifier.Place, len(ps))
	for i, p := range ps {
		out[i] = classifier.Place{Path: p.Path, Owner: p.Owner, What: p.What, Stem: p.Stem}
	}
	return out
}

// noticeRules checks that every rule block_message names exists: a notice for a misspelled id
// would never be shown. The daemon's own rules (coworkbridge.*) are not the classifier's and
// are taken as written.
func noticeRules(c *classifier.Classifier, n managedconfig.Notices) error {
	if len(n.Rules) == 0 {
		return nil
	}
	ids := c.RuleIDs()
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(n.Rules)) {
		if slices.Contains(ids, id) || ruleid.IsGuard(id) {
			continue
		}
		msg := fmt.Sprintf("block_message.rules names rule %q, which no rule file defines", id)
		if near, ok := spelling.Suggest(id, ids); ok {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		errs = append(errs, errors.New(msg))
	}
	return errors.Join(errs...)
}

// What runs when the policy given cannot be used whole.
const (
	FallbackRest     = "the rest of the policy" // a rules folder is missing
	FallbackPrevious = "the previous policy"    // the policy does not compile; the last good one runs
	FallbackBuiltin  = "the built-in rules"     // it does not compile and none compiled before
)

// Result is what Keeper.Apply put in force.
type Result struct {
	Classifier *classifier.Classifier
	// Problem is why the policy given is not in force whole; "" when it is.
	Problem error
	// Fallback names what runs instead (a Fallback* constant); "" when nothing is missing.
	Fallback string
}

// Keeper keeps the last classifier that compiled. It is not safe for concurrent use: the
// daemon applies configurations one at a time.
type Keeper struct {
	last *classifier.Classifier
}

// Apply compiles p and puts it in force, or keeps what ran before when it cannot. The error is
// only for a build whose own built-in rules do not compile.
func (k *Keeper) Apply(p managedconfig.Policy) (Result, error) {
	cls, err := Compile(p)
	switch {
	case err == nil:
		k.last = cls
		return Result{Classifier: cls}, nil
	case cls != nil:
		k.last = cls
		return Result{Classifier: cls, Problem: err, Fallback: FallbackRest}, nil
	case k.last != nil:
		return Result{Classifier: k.last, Problem: err, Fallback: FallbackPrevious}, nil
	}
	builtin, berr := Compile(managedconfig.Policy{})
	if berr != nil {
		return Result{}, fmt.Errorf("the built-in rules do not compile; this build is broken: %w", berr)
	}
	k.last = builtin
	return Result{Classifier: builtin, Problem: err, Fallback: FallbackBuiltin}, nil
}

// DenyAll is the policy for a managed configuration that is broken with no good copy to fall
// back on: which calls it would allow cannot be known, so every call is denied. The daemon and the
// host hook both fail closed with it.
//
// The reason is what the user and the agent read: it names the state and who can fix it, not the
// file's path or the validator's words, which `status`, the heartbeat and the daemon log carry for
// the admin.
func DenyAll() (*classifier.Classifier, error) {
	return classifier.New(classifier.Policy{DenyAll: "coworkbridge's configuration on this Mac is invalid (config_invalid) " +
		"and no good copy exists, so no call can be checked. Your IT team sees the problem in 'coworkbridge status'; ask them to fix it."})
}
