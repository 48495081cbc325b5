// Package secrets finds secrets in text: API keys and tokens by their shapes, private keys,
// passwords in URLs and in NAME=value assignments, bearer and basic credentials. The decision
// log redacts what it finds; the classifier denies sending it. It does not judge file paths
// (which files hold secrets is the classifier's policy) and never stores what it finds.
package secrets

import (
	"cmp"
	"regexp"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

// A rule finds one kind of secret. group is the submatch that holds the secret itself (0:
// the whole match), so that context such as "Bearer " or "PASSWORD=" stays readable. hints are
// substrings, one of which every match contains: a cheap test that spares most text the regexp.
type rule struct {
	kind  string
	re    func() *regexp.Regexp // compiled when a text first has one of its hints
	group int
	hints []string
	fold  bool // hints are compared case-insensitively
}

// rules are in priority order: the specific token shapes come before the contextual rules,
// so a GitHub token in PASSWORD=... is named for what it is.
var rules = []rule{
	{kind: "private_key", re: lazyregexp.New(`-----BEGIN[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----(?s:.*?)(?:-----END[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----|\z)`),
		hints: []string{"PRIVATE KEY"}},
	{kind: "anthropic_key", re: lazyregexp.New(`sk-ant-[A-Za-z0-9_\-]{16,}`), hints: []string{"sk-ant-"}},
	{kind: "openai_key", re: lazyregexp.New(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`), hints: []string{"sk-"}},
	{kind: "github_token", re: lazyregexp.New(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`), hints: []string{"gh", "github_pat_"}},
	{kind: "gitlab_token", re: lazyregexp.New(`\bglpat-[A-Za-z0-9_\-]{20,}`), hints: []string{"glpat-"}},
	{kind: "slack_webhook", re: lazyregexp.New(`https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+`), hints: []string{"hooks.slack.com"}},
	{kind: "slack_token", re: lazyregexp.New(`\bxox[abposre]-[A-Za-z0-9\-]{10,}`), hints: []string{"xox"}},
	{kind: "stripe_key", re: lazyregexp.New(`\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}`), hints: []string{"_live_", "_test_"}},
	{kind: "aws_access_key", re: lazyregexp.New(`\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b`),
		hints: []string{"AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"}},
	{kind: "aws_secret_key", re: lazyregexp.New(`(?i)(?:aws_?secret_?access_?key|secret_?access_?key|aws_?secret)["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})`),
		group: 1, hints: []string{"secret"}, fold: true},
	{kind: "jwt", re: lazyregexp.New(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`), hints: []string{"eyJ"}},
	{kind: "bearer_token", re: lazyregexp.New(`(?i)\bbearer\s+([A-Za-z0-9._~+/=\-]{8,})`), group: 1, hints: []string{"bearer"}, fold: true},
	{kind: "basic_auth", re: lazyregexp.New(`(?i)\bauthorization:\s*basic\s+([A-Za-z0-9+/=]{8,})`), group: 1, hints: []string{"basic"}, fold: true},
	{kind: "url_password", re: lazyregexp.New(`\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/:@'"\[\]]+:([^\s@/'"\[\]]+)@`), group: 1, hints: []string{"://"}},
	{kind: "env_secret", re: lazyregexp.New(`(?i)(?:^|[\s;&|('"` + "`" + `])(?:export\s+)?[A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|_KEY|_PWD)[A-Za-z0-9_]*=("[^"]*"|'[^']*'|[^\s;&|'"` + "`" + `)]+)`),
		group: 1, hints: []string{"="}},
}

// fieldName matches object keys whose string values are secrets whatever they look like.
var fieldName = lazyregexp.New(`(?i)^(?:.*[_\-])?(?:password|passwd|passphrase|secret|client_secret|token|access_token|refresh_token|api_?key|apikey|private_?key|secret_?key|access_?key|credentials?|auth)$`)

// Finding is one secret in a text: its kind and where it lies.
type Finding struct {
	Kind       string
	Start, End int
}

// Find returns the secrets in s, in order, overlapping ones merged and named after the most
// specific rule.
func Find(s string) []Finding {
	var found []Finding
	prios := map[int]int{}
	lower := ""
	for prio, r := range rules {
		if !r.hinted(s, &lower) {
			continue
		}
		for _, m := range r.re().FindAllStringSubmatchIndex(s, -1) {
			if start, end := m[2*r.group], m[2*r.group+1]; start >= 0 && end > start {
				found = append(found, Finding{Kind: r.kind, Start: start, End: end})
				prios[len(found)-1] = prio
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	idx := make([]int, len(found))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(found[a].Start, found[b].Start), cmp.Compare(prios[a], prios[b]))
	})
	var out []Finding
	for i := 0; i < len(idx); {
		cur, prio := found[idx[i]], prios[idx[i]]
		for i++; i < len(idx) && found[idx[i]].Start < cur.End; i++ {
			cur.End = max(cur.End, found[idx[i]].End)
			if p := prios[idx[i]]; p < prio {
				prio, cur.Kind = p, found[idx[i]].Kind
			}
		}
		out = append(out, cur)
	}
	return out
}

// Contains reports whether s holds a secret; cheaper than Find when only that matters.
func Contains(s string) bool {
	lower := ""
	for _, r := range rules {
		if r.hinted(s, &lower) && r.re().MatchString(s) {
			return true
		}
	}
	return false
}

// FieldName reports whether an object key names a secret (password, api_key, token...), whose
// value is one whatever it looks like.
func FieldName(key string) bool { return fieldName().MatchString(key) }

func (r rule) hinted(s string, lower *string) bool {
	hay := s
	if r.fold {
		if *lower == "" {
			*lower = strings.ToLower(s)
		}
		hay = *lower
	}
	for _, h := range r.hints {
		if strings.Contains(hay, h) {
			return true
		}
	}
	return false
}
