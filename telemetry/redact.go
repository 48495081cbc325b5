package telemetry

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
)

// A secretRule finds one kind of secret. group is the submatch that holds the secret itself (0:
// the whole match), so that context such as "Bearer " or "PASSWORD=" stays readable. hints are
// substrings, one of which every match contains: a cheap test that spares most text the regexp.
type secretRule struct {
	kind  string
	re    *regexp.Regexp
	group int
	hints []string
	fold  bool // hints are compared case-insensitively
}

// secretRules are in priority order: the specific token shapes come before the contextual rules,
// so a GitHub token in PASSWORD=... is named for what it is.
var secretRules = []secretRule{
	{kind: "private_key", re: regexp.MustCompile(`-----BEGIN[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----(?s:.*?)(?:-----END[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----|\z)`),
		hints: []string{"PRIVATE KEY"}},
	{kind: "anthropic_key", re: regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{16,}`), hints: []string{"sk-ant-"}},
	{kind: "openai_key", re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`), hints: []string{"sk-"}},
	{kind: "github_token", re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`), hints: []string{"gh", "github_pat_"}},
	{kind: "gitlab_token", re: regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`), hints: []string{"glpat-"}},
	{kind: "slack_webhook", re: regexp.MustCompile(`https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+`), hints: []string{"hooks.slack.com"}},
	{kind: "slack_token", re: regexp.MustCompile(`\bxox[abposre]-[A-Za-z0-9\-]{10,}`), hints: []string{"xox"}},
	{kind: "stripe_key", re: regexp.MustCompile(`\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}`), hints: []string{"_live_", "_test_"}},
	{kind: "aws_access_key", re: regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b`),
		hints: []string{"AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"}},
	{kind: "aws_secret_key", re: regexp.MustCompile(`(?i)(?:aws_?secret_?access_?key|secret_?access_?key|aws_?secret)["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})`),
		group: 1, hints: []string{"secret"}, fold: true},
	{kind: "jwt", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`), hints: []string{"eyJ"}},
	{kind: "bearer_token", re: regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/=\-]{8,})`), group: 1, hints: []string{"bearer"}, fold: true},
	{kind: "basic_auth", re: regexp.MustCompile(`(?i)\bauthorization:\s*basic\s+([A-Za-z0-9+/=]{8,})`), group: 1, hints: []string{"basic"}, fold: true},
	{kind: "url_password", re: regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/:@'"\[\]]+:([^\s@/'"\[\]]+)@`), group: 1, hints: []string{"://"}},
	{kind: "env_secret", re: regexp.MustCompile(`(?i)(?:^|[\s;&|('"` + "`" + `])(?:export\s+)?[A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|_KEY|_PWD)[A-Za-z0-9_]*=("[^"]*"|'[^']*'|[^\s;&|'"` + "`" + `)]+)`),
		group: 1, hints: []string{"="}},
}

// secretField matches object keys whose string values are secrets whatever they look like.
var secretField = regexp.MustCompile(`(?i)^(?:.*[_\-])?(?:password|passwd|passphrase|secret|client_secret|token|access_token|refresh_token|api_?key|apikey|private_?key|secret_?key|access_?key|credentials?|auth)$`)

// Redact replaces every value in s that looks like a secret by [REDACTED:<kind>]. Every rule
// looks at the original text, so no rule's replacement can hide another rule's context; where
// spans overlap they are merged and named after the earliest rule.
func Redact(s string) string {
	var spans []span
	lower := ""
	for prio, r := range secretRules {
		if !r.hinted(s, &lower) {
			continue
		}
		for _, m := range r.re.FindAllStringSubmatchIndex(s, -1) {
			if start, end := m[2*r.group], m[2*r.group+1]; start >= 0 && end > start {
				spans = append(spans, span{start, end, prio})
			}
		}
	}
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.prio, b.prio)) })
	var b strings.Builder
	last := 0
	for i := 0; i < len(spans); {
		cur := spans[i]
		for i++; i < len(spans) && spans[i].start < cur.end; i++ {
			cur.end = max(cur.end, spans[i].end)
			cur.prio = min(cur.prio, spans[i].prio)
		}
		b.WriteString(s[last:cur.start])
		b.WriteString("[REDACTED:" + secretRules[cur.prio].kind + "]")
		last = cur.end
	}
	b.WriteString(s[last:])
	return b.String()
}

type span struct{ start, end, prio int }

func (r secretRule) hinted(s string, lower *string) bool {
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

// isSecretField reports whether an object key names a secret.
func isSecretField(key string) bool { return secretField.MatchString(key) }
