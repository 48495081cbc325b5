package report

import (
	"cmp"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/corpus"
)

// Replay is what a candidate policy would change in the records the report read: the verdict
// each call was logged with against the one the candidate gives it. The caller judges the
// records again (it holds the classifier) through OnRecord, so that a record read twice is
// judged once; the report only shows the result.
type Replay struct {
	Candidate   string           `json:"candidate"`
	Fingerprint string           `json:"rules_fingerprint,omitempty"`
	Result      *corpus.Replayed `json:"result"`
}

// ReplayChange is one kind of change (logged verdict → candidate's verdict), for the page.
type ReplayChange struct {
	From, To string
	Count    int
	Examples []corpus.Change
}

// Changes are the replay's changes, the most frequent first.
func (r *Replay) Changes() []ReplayChange {
	var out []ReplayChange
	for k, n := range r.Result.Changes {
		from, to, _ := strings.Cut(k, "->")
		out = append(out, ReplayChange{From: from, To: to, Count: n, Examples: r.Result.Examples[k]})
	}
	slices.SortFunc(out, func(a, b ReplayChange) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.From+a.To, b.From+b.To))
	})
	return out
}

// Changed is how many calls would change verdict.
func (r *Replay) Changed() (n int) {
	for _, c := range r.Result.Changes {
		n += c
	}
	return n
}

// Listed is how many changed calls the report lists (Result.Keep of each kind).
func (r *Replay) Listed() (n int) {
	for _, ex := range r.Result.Examples {
		n += len(ex)
	}
	return n
}

// Tighter says whether a change makes the verdict stricter (allow → ask → deny): the page
// colours those apart from the ones that let more through.
func (c ReplayChange) Tighter() bool {
	rank := func(v string) int {
		v, observe := strings.CutSuffix(v, " (rule in observe)")
		n := map[string]int{"allow": 0, "ask": 2, "deny": 4}[v]
		if observe && n > 0 {
			n-- // reported, not applied: stricter than allow, laxer than the applied verdict
		}
		return n
	}
	return rank(c.To) > rank(c.From)
}

func (r *Replay) writeText(p func(string, ...any)) {
	res := r.Result
	p("\nreplay under %s", r.Candidate)
	if r.Fingerprint != "" {
		p(" (rules fingerprint %s)", r.Fingerprint)
	}
	p("\n  replayed %d of %d records (%d whose input was not logged, %d guard events)\n",
		res.Replayed, res.Records, res.NotLogged, res.GuardEvents)
	changes := r.Changes()
	if len(changes) == 0 {
		p("  no verdict would change\n")
	}
	for _, c := range changes {
		p("  %s → %s: %d\n", c.From, c.To, c.Count)
		for _, ex := range c.Examples[:min(len(c.Examples), 3)] {
			p("    %s %s %s %s  (%s → %s)\n", ex.Host, ex.RID, ex.Tool, ex.Input, cmp.Or(ex.OldRule, "no rule"), cmp.Or(ex.NewRule, "no rule"))
		}
	}
}
