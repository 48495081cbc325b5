// Package secrets finds secrets in text: API keys and tokens by their shapes (gitleaks' default
// rule set, pinned in go.mod and turned into Go by a test), private keys, passwords in URLs,
// in NAME=value assignments and in URL queries, bearer and basic credentials, also when shell
// quoting splits them (gh”p_...). The decision log redacts what it finds; the classifier denies
// sending it. It does not judge file paths (which files hold secrets is the classifier's
// policy), does not decode base64 or percent-encoding, and never stores what it finds.
package secrets

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	lazyvalue "github.com/coworkbridge/coworkbridge/internal/lazy"
	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

type lazy = *lazyregexp.Regexp

// A rule finds one kind of secret. group is the submatch that holds the secret itself, so that
// context such as "Bearer " or "PASSWORD=" stays readable; 0 follows gitleaks: the first
// submatch that matched anything, else the whole match. hints are lower-case substrings, one
// of which every match contains: a cheap test that spares most text the expression, which is
// compiled only when a text first has one of them.
type rule struct {
	kind    string
	re      lazy
	group   int
	entropy float64 // a secret of no more Shannon entropy (bits per byte) than this is not one
	hints   []string
	allow   []allowlist
	shared  bool // gitleaks' global allowlists apply
	// context: the rule finds a secret by a keyword (one of hints) shortly before it, and its
	// expression starts at the keyword. It is run only on windows of the text around each
	// keyword, and its match widened back over the word the keyword ends, as gitleaks matches.
	context bool
}

// Bounds of a keyword rule's match around its keyword: gitleaks allows 50 characters of the
// word before it, and the secret ends within 200 after it.
const (
	contextBefore = 50
	contextAfter  = 256
)

// An allowlist says a finding is not a secret after all: one of its expressions matches (the
// secret, or with target "match" the rule's whole match, "line" the line it is on) or the
// secret holds one of its stop words; with and, both must hold.
type allowlist struct {
	target    string
	and       bool
	regexes   []lazy
	stopwords []string
}

// ownShapes are tokens in looser shapes than gitleaks' exact ones (cut short, older formats,
// test keys) and secrets it has no rule for; gitleaks' allowlists do not apply to them.
var ownShapes = []rule{
	{kind: "anthropic-api-key", re: lazyregexp.New(`\bsk-ant-[A-Za-z0-9_\-]{16,}`), hints: []string{"sk-ant-"}},
	{kind: "openai-api-key", re: lazyregexp.New(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`), hints: []string{"sk-"}},
	{kind: "github-pat", re: lazyregexp.New(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`), hints: []string{"gh", "github_pat_"}},
	{kind: "gitlab-pat", re: lazyregexp.New(`\bglpat-[A-Za-z0-9_\-]{20,}`), hints: []string{"glpat-"}},
	{kind: "slack-webhook-url", re: lazyregexp.New(`https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+`), hints: []string{"hooks.slack.com"}},
	{kind: "slack-token", re: lazyregexp.New(`\bxox[abposre]-[A-Za-z0-9\-]{10,}`), hints: []string{"xox"}},
	{kind: "stripe-access-token", re: lazyregexp.New(`\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}`), hints: []string{"_live_", "_test_"}},
	{kind: "aws-access-token", re: lazyregexp.New(`\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b`),
		hints: []string{"akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "anpa", "anva", "aipa"}},
	{kind: "aws-secret-access-key", re: lazyregexp.New(`(?i)(?:aws_?secret_?access_?key|secret_?access_?key|aws_?secret)["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})`),
		group: 1, hints: []string{"secret"}},
	{kind: "jwt", re: lazyregexp.New(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`), hints: []string{"eyj"}},
	{kind: "private-key", re: lazyregexp.New(`-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\z)`),
		hints: []string{"private key"}},
}

// ownContext are secrets told by what stands around them: credentials in headers, URLs and
// assignments, whatever their shape.
var ownContext = []rule{
	{kind: "bearer-token", re: lazyregexp.New(`(?i)\bbearer\s+([A-Za-z0-9._~+/=\-]{8,})`), group: 1, hints: []string{"bearer"}},
	{kind: "basic-auth", re: lazyregexp.New(`(?i)\bauthorization:\s*basic\s+([A-Za-z0-9+/=]{8,})`), group: 1, hints: []string{"basic"}},
	{kind: "url-password", re: lazyregexp.New(`\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/:@'"\[\]]+:([^\s@/'"\[\]]+)@`), group: 1, hints: []string{"://"}},
	{kind: "assigned-secret", re: lazyregexp.New(`(?i)(?:^|[\s;&|('"?,{` + "`" + `])(?:export\s+)?[A-Za-z0-9_\-]*(?:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|SIGNATURE|_KEY|_PWD)[A-Za-z0-9_\-]*=("[^"]*"|'[^']*'|[^\s;&|'"` + "`" + `)#]+)`),
		group: 1, hints: []string{"token", "secret", "passw", "passphrase", "api_key", "apikey", "access_key", "accesskey", "private_key", "privatekey", "credential", "signature", "_key", "_pwd"}, allow: []allowlist{{regexes: []lazy{variableOnly}}}},
}

// variableOnly is a value that names a variable, not a secret: PASSWORD=$PASSWORD.
var variableOnly = lazyregexp.New(`^["']?\$\{?[A-Za-z_][A-Za-z0-9_]*\}?["']?$`)

// fieldWords are the last words of object keys whose string values are secrets whatever they
// look like: the key is one, or ends in _ or - and one. "key" counts after one of keyWords.
var fieldWords = []string{"password", "passwd", "passphrase", "secret", "token", "credential", "credentials", "auth", "key"}

// keyWords are the words before "key" that make it a secret's key, joined by _ or nothing
// (api_key, apikey; not api-key).
var keyWords = []string{"api", "private", "secret", "access"}

// ruleSet is the rules in priority order and the index of their hints.
type ruleSet struct {
	rules []*rule // into the tables laid out in the binary: nothing is copied
	// The index is built for the first text longer than shortText, or once shortScans texts
	// have been scanned: a hook process redacts a few short texts, for which looking for each
	// hint in turn costs less than building it, where a daemon scans every record's.
	index   sync.Once
	scanned atomic.Int32
	single  [256][]int32 // hints of one byte, by that byte
	// begins marks the pairs of bytes some hint begins with, and pairs holds the longer hints
	// sorted by that pair, since a text is scanned a byte at a time and most pairs begin no
	// hint: a bitset of 8 KiB rather than an index of every pair (128 KiB), and one sorted
	// slice rather than a map of slices.
	begins    [1 << 16 / 64]uint64
	pairs     []hintRef
	shortText int // shortText, or another bound in the tests
}

// shortText is the longest text whose hints may be looked for one by one, and shortScans how
// many texts are, before the index is built: one by one costs about five times an indexed scan,
// and building the index about four such scans.
const (
	shortText  = 512
	shortScans = 8
)

// hintRef is a hint of two bytes or more, by the pair it begins with, and its rule.
type hintRef struct {
	pair uint16
	word string
	rule int32
}

// allRules orders the rules: gitleaks' shapes, ours, then the rules of context, gitleaks'
// catch-all last. Where findings overlap, the earlier rule names the merged one.
var allRules = lazyvalue.Value[*ruleSet]{Make: newRuleSet}

func newRuleSet() *ruleSet {
	rs := &ruleSet{shortText: shortText}
	rs.rules = make([]*rule, 0, len(gitleaksRules)+len(ownShapes)+len(ownContext)+len(gitleaksContextRules))
	for _, table := range [][]rule{gitleaksRules, ownShapes, ownContext, gitleaksContextRules} {
		for i := range table {
			rs.rules = append(rs.rules, &table[i])
		}
	}
	return rs
}

// buildIndex indexes the rules' hints.
func (rs *ruleSet) buildIndex() {
	n := 0
	for _, r := range rs.rules {
		n += len(r.hints)
	}
	rs.pairs = make([]hintRef, 0, n)
	for i, r := range rs.rules {
		for _, h := range r.hints {
			switch {
			case len(h) == 1:
				rs.single[h[0]] = append(rs.single[h[0]], int32(i))
			case len(h) > 1:
				p := uint16(h[0])<<8 | uint16(h[1])
				rs.begins[p>>6] |= 1 << (p & 63)
				rs.pairs = append(rs.pairs, hintRef{p, h, int32(i)})
			}
		}
	}
	// Within a pair the hints keep the rules' order.
	slices.SortFunc(rs.pairs, func(a, b hintRef) int { return cmp.Or(cmp.Compare(a.pair, b.pair), cmp.Compare(a.rule, b.rule)) })
}

// hinted marks the rules one of whose hints lower holds.
func (rs *ruleSet) hinted(lower string) []bool {
	marked := make([]bool, len(rs.rules))
	if len(lower) <= rs.shortText && rs.scanned.Load() < shortScans && rs.scanned.Add(1) <= shortScans {
		for i, r := range rs.rules {
			marked[i] = slices.ContainsFunc(r.hints, func(h string) bool { return strings.Contains(lower, h) })
		}
		return marked
	}
	rs.index.Do(rs.buildIndex)
	for i := 0; i < len(lower); i++ {
		for _, r := range rs.single[lower[i]] {
			marked[r] = true
		}
		if i+1 == len(lower) {
			break
		}
		p := uint16(lower[i])<<8 | uint16(lower[i+1])
		if rs.begins[p>>6]&(1<<(p&63)) == 0 {
			continue
		}
		j, _ := slices.BinarySearchFunc(rs.pairs, p, func(h hintRef, p uint16) int { return cmp.Compare(h.pair, p) })
		for ; j < len(rs.pairs) && rs.pairs[j].pair == p; j++ {
			if h := rs.pairs[j]; !marked[h.rule] && strings.HasPrefix(lower[i:], h.word) {
				marked[h.rule] = true
			}
		}
	}
	return marked
}

// Finding is one secret in a text: its kind and where it lies.
type Finding struct {
	Kind       string
	Start, End int
}

type hit struct {
	Finding
	prio int
}

// Find returns the secrets in s, in order, overlapping ones merged and named after the most
// specific rule. A secret that shell quoting splits is found as the shell would join it, and
// its span covers the quotes.
func Find(s string) []Finding { return merge(allRules.Get().findQuoted(s, nil)) }

// findQuoted finds the secrets in s and in s as the shell joins it.
func (rs *ruleSet) findQuoted(s string, hits []hit) []hit {
	hits = rs.find(s, hits)
	if view, pos, ok := shellView(s); ok {
		for _, h := range rs.find(view, nil) {
			h.Start, h.End = pos[h.Start], pos[h.End-1]+1
			hits = append(hits, h)
		}
	}
	return hits
}

// FindInName is Find for a name built of parts, a path or an MCP tool's name (mcp__server__tool):
// each part is also judged as a word of its own, since a rule that wants a token to start a word
// does not see one glued to a separator that is a word character.
func FindInName(name string) []Finding {
	rs := allRules.Get()
	hits := rs.findQuoted(name, nil)
	for _, parts := range []func(s string, i int) bool{mcpSeparator, pathSeparator} {
		if view, ok := spaced(name, parts); ok {
			hits = rs.findQuoted(view, hits)
		}
	}
	return merge(hits)
}

func mcpSeparator(s string, i int) bool {
	return s[i] == '_' && (i+1 < len(s) && s[i+1] == '_' || i > 0 && s[i-1] == '_')
}

func pathSeparator(s string, i int) bool { return s[i] == '/' || s[i] == '\\' || s[i] == ':' }

// spaced is s with the bytes sep picks out made spaces, so that offsets stay those of s.
func spaced(s string, sep func(s string, i int) bool) (string, bool) {
	var b []byte
	for i := range len(s) {
		if sep(s, i) {
			if b == nil {
				b = []byte(s)
			}
			b[i] = ' '
		}
	}
	return string(b), b != nil
}

// Contains reports whether s holds a secret.
func Contains(s string) bool { return len(Find(s)) > 0 }

// FieldName reports whether an object key names a secret (password, api_key, token...), whose
// value is one whatever it looks like.
// Case is folded as Unicode folds it (the Kelvin sign is a k, the long s an s), and a newline
// ends what may stand before the word. String tests, not a pattern: every hook process redacts
// its record, and compiling a pattern cost more than the redaction (fieldNamePattern in the
// tests is the specification it is held to).
func FieldName(key string) bool {
	k := foldKey(key)
	for _, w := range fieldWords {
		before, ok := strings.CutSuffix(k, w)
		if ok && w == "key" {
			before, ok = keyWordBefore(before)
		}
		if ok && (before == "" || endsWithSeparator(before) && !strings.Contains(before, "\n")) {
			return true
		}
	}
	return false
}

// keyWordBefore cuts one of keyWords (and the _ after it) from the end of what stands before "key".
func keyWordBefore(before string) (string, bool) {
	before = strings.TrimSuffix(before, "_")
	for _, w := range keyWords {
		if rest, ok := strings.CutSuffix(before, w); ok {
			return rest, true
		}
	}
	return "", false
}

func endsWithSeparator(s string) bool { return s[len(s)-1] == '_' || s[len(s)-1] == '-' }

// foldKey lowercases a key, folding the letters outside ASCII that fold to the words' (K, ſ).
func foldKey(key string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'A' <= r && r <= 'Z':
			return r + 'a' - 'A'
		case r == '\u212a':
			return 'k'
		case r == '\u017f':
			return 's'
		}
		return r
	}, key)
}

func (rs *ruleSet) find(s string, hits []hit) []hit {
	lower := asciiLower(s)
	marked := rs.hinted(lower)
	for prio := range rs.rules {
		if !marked[prio] {
			continue
		}
		r := rs.rules[prio]
		for _, w := range r.windows(lower) {
			for _, m := range r.re.FindAllStringSubmatchIndex(s[w[0]:w[1]], -1) {
				for i := range m {
					if m[i] >= 0 {
						m[i] += w[0]
					}
				}
				if r.context {
					m[0] = widen(s, m[0], w[0])
				}
				start, end := r.secret(m)
				if end <= start || !r.holds(s, m, start, end) {
					continue
				}
				hits = append(hits, hit{Finding{Kind: r.kind, Start: start, End: end}, prio})
			}
		}
	}
	return hits
}

// windows are the spans of the text the rule's expression runs on: all of it, or for a keyword
// rule the spans around its keywords, merged where they overlap.
func (r rule) windows(lower string) [][2]int {
	if !r.context {
		return [][2]int{{0, len(lower)}}
	}
	var at [][2]int
	for _, h := range r.hints {
		for i := 0; ; {
			j := strings.Index(lower[i:], h)
			if j < 0 {
				break
			}
			at = append(at, [2]int{max(0, i+j-contextBefore), min(len(lower), i+j+len(h)+contextAfter)})
			i += j + len(h)
		}
	}
	slices.SortFunc(at, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
	var out [][2]int
	for _, w := range at {
		if n := len(out); n > 0 && w[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], w[1])
			continue
		}
		out = append(out, w)
	}
	return out
}

// widen moves a keyword rule's match start back over the word characters before it (at most
// contextBefore, not before floor): the match gitleaks' allowlists look at.
func widen(s string, start, floor int) int {
	for n := 0; n < contextBefore && start > floor && wordDotDash(s[start-1]); n++ {
		start--
	}
	return start
}

func wordDotDash(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// secret is the span of the secret in a match m (submatch indexes).
func (r rule) secret(m []int) (start, end int) {
	if r.group > 0 && 2*r.group+1 < len(m) {
		return m[2*r.group], m[2*r.group+1]
	}
	for g := 1; 2*g+1 < len(m) && r.group == 0; g++ {
		if m[2*g] >= 0 && m[2*g+1] > m[2*g] {
			return m[2*g], m[2*g+1]
		}
	}
	return m[0], m[1]
}

// holds reports whether a candidate survives the rule's entropy floor and every allowlist.
func (r rule) holds(s string, m []int, start, end int) bool {
	secret := s[start:end]
	if r.entropy > 0 && entropy(secret) <= r.entropy {
		return false
	}
	if r.shared && slices.ContainsFunc(gitleaksAllow, func(a allowlist) bool { return a.allows(s, m, secret) }) {
		return false
	}
	return !slices.ContainsFunc(r.allow, func(a allowlist) bool { return a.allows(s, m, secret) })
}

func (a allowlist) allows(s string, m []int, secret string) bool {
	target := secret
	switch a.target {
	case "match":
		target = s[m[0]:m[1]]
	case "line":
		target = lineAround(s, m[0], m[1])
	}
	regex := slices.ContainsFunc(a.regexes, func(re lazy) bool { return re.MatchString(target) })
	stop := false
	if len(a.stopwords) > 0 {
		lower := asciiLower(secret)
		stop = slices.ContainsFunc(a.stopwords, func(w string) bool { return strings.Contains(lower, w) })
	}
	if a.and {
		return (len(a.regexes) == 0 || regex) && (len(a.stopwords) == 0 || stop)
	}
	return regex || stop
}

func lineAround(s string, start, end int) string {
	from := strings.LastIndexByte(s[:start], '\n') + 1
	to := strings.IndexByte(s[end:], '\n')
	if to < 0 {
		return s[from:]
	}
	return s[from : end+to]
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var h float64
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// asciiLower lowers ASCII letters only, so that byte offsets stay those of s.
func asciiLower(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return 'A' <= r && r <= 'Z' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if 'A' <= b[i] && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// shellView is s with the shell's quoting taken out (quotes dropped, a backslash's character
// kept) and, for each of its bytes, where it lies in s; ok is false when no quoting in s splits
// a word, so that the view could not hold a secret s does not.
func shellView(s string) (view string, pos []int, ok bool) {
	if !splitsAWord(s) {
		return "", nil, false
	}
	b := make([]byte, 0, len(s))
	pos = make([]int, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '"':
			continue
		case c == '\\' && i+1 < len(s):
			i++
		}
		b = append(b, s[i])
		pos = append(pos, i)
	}
	return string(b), pos, true
}

// splitsAWord reports whether a run of quotes or backslashes in s stands between two
// characters of one word (gh”p_, "ab"cd, ab\cd).
func splitsAWord(s string) bool {
	for i := strings.IndexAny(s, `'"\`); i >= 0 && i < len(s); {
		j := i
		for j < len(s) && (s[j] == '\'' || s[j] == '"' || s[j] == '\\') {
			j++
		}
		if i > 0 && j < len(s) && wordByte(s[i-1]) && wordByte(s[j]) {
			return true
		}
		next := strings.IndexAny(s[j:], `'"\`)
		if next < 0 {
			break
		}
		i = j + next
	}
	return false
}

func wordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/' || c == '+'
}

// merge sorts hits and joins overlapping ones under the kind of the highest priority.
func merge(hits []hit) []Finding {
	if len(hits) == 0 {
		return nil
	}
	slices.SortFunc(hits, func(a, b hit) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.prio, b.prio))
	})
	var out []Finding
	for i := 0; i < len(hits); {
		cur, prio := hits[i].Finding, hits[i].prio
		for i++; i < len(hits) && hits[i].Start < cur.End; i++ {
			cur.End = max(cur.End, hits[i].End)
			if hits[i].prio < prio {
				prio, cur.Kind = hits[i].prio, hits[i].Kind
			}
		}
		out = append(out, cur)
	}
	return out
}
