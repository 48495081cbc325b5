package secrets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	lower = "abcdefghijklmnopqrstuvwxyz"
	hex   = "0123456789abcdef"
)

// fake is n characters of alphabet, chosen by a fixed generator: a token that looks real and was
// never issued.
func fake(alphabet string, n int) string {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(len(alphabet))))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

// providerTokens are one token per provider the threat model names, in each one's real shape.
var providerTokens = []struct{ provider, text, kind string }{
	{"github", "ghp_" + fake(alnum, 36), "github-pat"},
	{"github fine-grained", "github_pat_" + fake(alnum+"_", 82), "github-fine-grained-pat"},
	{"aws", "AKIAQ3EGUZRP4TMJX7NB", "aws-access-token"},
	{"slack", "xoxb-2048163951-7306712458193-" + fake(alnum, 24), "slack-bot-token"},
	{"anthropic", "sk-ant-api03-" + fake(alnum+"_-", 93) + "AA", "anthropic-api-key"},
	{"anthropic, other lengths", "sk-ant-api04-" + fake(alnum, 40), "anthropic-api-key"},
	{"openai", "sk-proj-" + fake(alnum+"_-", 58) + "T3BlbkFJ" + fake(alnum, 58), "openai-api-key"},
	{"openai, other shapes", "sk-" + fake(alnum, 48), "openai-api-key"},
	{"google", "AIza" + fake(alnum+"_-", 35), "gcp-api-key"},
	{"npm", "npm_" + fake(alnum, 36), "npm-access-token"},
	{"hugging face", "hf_" + fake(lower, 34), "huggingface-access-token"},
	{"sendgrid", "SG." + fake(alnum, 22) + "." + fake(alnum+"_-", 43), "sendgrid-api-token"},
	{"digitalocean", "dop_v1_" + fake(hex, 64), "digitalocean-pat"},
	{"databricks", "dapi" + fake(hex, 32), "databricks-api-token"},
	{"azure", "abc8Q~" + fake(alnum+"_~.", 34), "azure-ad-client-secret"},
	{"gitlab", "glpat-" + fake(alnum, 20), "gitlab-pat"},
	{"stripe", "sk_live_" + fake(alnum, 24), "stripe-access-token"},
}

func TestFindNamesEachProvidersToken(t *testing.T) {
	for _, tt := range providerTokens {
		text := "token: " + tt.text
		found := Find(text)
		if len(found) != 1 || found[0].Kind != tt.kind || text[found[0].Start:found[0].End] != tt.text {
			t.Errorf("%s: Find(%q) = %+v, want the token as one %s", tt.provider, text, found, tt.kind)
		}
	}
}

func TestFindNamesSecretsThatContextGivesAway(t *testing.T) {
	tests := []struct{ text, secret, kind string }{
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA", "private-key"},
		{"https://ada:hunter22@db.example.com/x", "hunter22", "url-password"},
		{"export API_TOKEN=abc123def", "abc123def", "assigned-secret"},
		{"curl 'https://api.example.com/v1/items?api_key=Zq8Lm3Xv9K2r&page=2'", "Zq8Lm3Xv9K2r", "assigned-secret"},
		{"Authorization: Bearer abcdefgh12345678", "abcdefgh12345678", "bearer-token"},
	}
	for _, tt := range tests {
		found := Find(tt.text)
		if len(found) != 1 || found[0].Kind != tt.kind || tt.text[found[0].Start:found[0].End] != tt.secret {
			t.Errorf("Find(%q) = %+v, want %q as one %s", tt.text, found, tt.secret, tt.kind)
		}
	}
}

func TestATokenSplitByShellQuotingIsFoundAsTheShellJoinsIt(t *testing.T) {
	token := providerTokens[0].text
	for _, split := range []string{
		token[:2] + "''" + token[2:],
		token[:2] + `""` + token[2:],
		`"` + token[:10] + `"'` + token[10:] + `'`,
		token[:3] + `\` + token[3:],
	} {
		text := "curl -H 'x: y' -u " + split + " https://api.github.com"
		found := Find(text)
		if len(found) != 1 || found[0].Kind != "github-pat" || !strings.Contains(text[found[0].Start:found[0].End], split[1:len(split)-1]) {
			t.Errorf("Find(%q) = %+v, want the split token as one github-pat", text, found)
		}
	}
}

func TestOrdinaryTextHoldsNoSecret(t *testing.T) {
	for _, s := range []string{
		"Quarterly report: revenue up 12%",
		"the token bucket algorithm limits rates",
		"https://example.com/docs?page=2",
		"password reset instructions are in the wiki",
		"sk-short",
		"export API_TOKEN=$API_TOKEN",
		"cp .env.example .env",
		"git log --author=ada --since=2026-01-01",
		"go test ./... -run TestSecretKeyRotation",
	} {
		if found := Find(s); len(found) != 0 || Contains(s) {
			t.Errorf("Find(%q) = %+v, want nothing", s, found)
		}
	}
}

func TestOverlappingFindingsAreMergedUnderTheMostSpecificKind(t *testing.T) {
	s := "PASSWORD=" + providerTokens[0].text
	found := Find(s)
	if len(found) != 1 || found[0].Kind != "github-pat" {
		t.Fatalf("Find = %+v, want one github-pat", found)
	}
}

// corpusFile is the redaction corpus: for every rule, a text holding a secret drawn from its
// expression, and the same text with the secret split by shell quoting. Other packages' tests
// check that no secret of it reaches what they write.
const corpusFile = "testdata/redaction.jsonl"

type corpusRow struct {
	Kind   string `json:"kind"`
	Form   string `json:"form"`
	Text   string `json:"text"`
	Secret string `json:"secret"`
}

// Every rule of the set finds a secret of its own shape, and the same secret split by quotes.
func TestEveryRuleFindsASecretDrawnFromItsShapeAndSplitByQuotes(t *testing.T) {
	var rows []corpusRow
	for _, r := range allRules.Get().rules {
		row, ok := drawSample(*r)
		if !ok {
			t.Errorf("no sample of %s was found and covered", r.kind)
			continue
		}
		rows = append(rows, row)
		if split, ok := splitByQuotes(row); ok {
			rows = append(rows, split)
		}
	}
	if *update {
		writeCorpus(t, rows)
	}
	for _, row := range readCorpus(t) {
		found := Find(row.Text)
		at := strings.Index(row.Text, row.Secret)
		if at < 0 || !covered(found, at, at+len(row.Secret)) {
			t.Errorf("%s (%s): %q in %q is not found whole: %+v", row.Kind, row.Form, row.Secret, row.Text, found)
		}
	}
}

func drawSample(r rule) (corpusRow, bool) {
	for seed := range uint64(300) {
		text := withHint(r, sample(r.re.Regexp(), seed))
		m := r.re.FindStringSubmatchIndex(text)
		if m == nil || !r.wouldFind(text) {
			continue
		}
		start, end := r.secret(m)
		if covered(Find(text), start, end) {
			return corpusRow{Kind: r.kind, Form: "shape", Text: text, Secret: text[start:end]}, true
		}
	}
	return corpusRow{}, false
}

// splitByQuotes puts an empty pair of quotes in the middle of the row's secret, as an agent
// would to slip it past a matcher; the shell joins it again.
func splitByQuotes(row corpusRow) (corpusRow, bool) {
	if len(row.Secret) < 8 || strings.ContainsAny(row.Text, "'\"\\\n\t ") {
		return corpusRow{}, false
	}
	at := strings.Index(row.Text, row.Secret) + len(row.Secret)/2
	text := row.Text[:at] + "''" + row.Text[at:]
	if !strings.Contains(text, row.Secret[:len(row.Secret)/2]+"''") {
		return corpusRow{}, false
	}
	split := row.Secret[:len(row.Secret)/2] + "''" + row.Secret[len(row.Secret)/2:]
	return corpusRow{Kind: row.Kind, Form: "split", Text: text, Secret: split}, true
}

func writeCorpus(t *testing.T, rows []corpusRow) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(corpusFile, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readCorpus(t *testing.T) []corpusRow {
	data, err := os.ReadFile(corpusFile)
	if err != nil {
		t.Fatalf("%v (write it with go test ./secrets -run EveryRule -update)", err)
	}
	var rows []corpusRow
	for line := range strings.Lines(string(data)) {
		var r corpusRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %v", corpusFile, err)
		}
		rows = append(rows, r)
	}
	kinds := map[string]bool{}
	for _, r := range rows {
		kinds[r.Kind] = true
	}
	for _, r := range allRules.Get().rules {
		if !kinds[r.kind] {
			t.Errorf("%s has no sample of %s: regenerate it with -update", corpusFile, r.kind)
		}
	}
	return rows
}

// withHint puts the rule's first keyword before text when text lacks all of them: gitleaks
// looks for keywords in the whole text, and some rules' keywords are not part of what their
// expression matches (the service's name near its token).
func withHint(r rule, text string) string {
	lower := strings.ToLower(text)
	if len(r.hints) == 0 || slices.ContainsFunc(r.hints, func(h string) bool { return strings.Contains(lower, h) }) {
		return text
	}
	return r.hints[0] + " " + text
}

// wouldFind reports whether the rule by itself, past its entropy floor and allowlists, finds
// something in text: the sampler draws strings the expression matches, not all secrets.
func (r rule) wouldFind(text string) bool {
	for _, m := range r.re.FindAllStringSubmatchIndex(text, -1) {
		if start, end := r.secret(m); end > start && r.holds(text, m, start, end) {
			return true
		}
	}
	return false
}

func covered(found []Finding, start, end int) bool {
	for _, f := range found {
		if f.Start <= start && end <= f.End {
			return true
		}
	}
	return false
}

func TestTheRulesAreGitleaksReleaseThenOwnThenGeneric(t *testing.T) {
	rs := allRules.Get()
	if len(rs.rules) < 200 {
		t.Fatalf("%d rules; gitleaks %s alone has more than 200", len(rs.rules), gitleaksVersion)
	}
	if last := rs.rules[len(rs.rules)-1].kind; last != "generic-api-key" {
		t.Errorf("the last rule is %s, want generic-api-key", last)
	}
	for _, r := range rs.rules {
		for _, h := range r.hints {
			if h != strings.ToLower(h) || h == "" {
				t.Errorf("%s: hint %q is not lower-case", r.kind, h)
			}
		}
	}
}

func TestFieldNamesThatHoldSecrets(t *testing.T) {
	for key, want := range map[string]bool{"password": true, "api_key": true, "client_secret": true, "x-auth": true, "title": false, "path": false} {
		if got := FieldName(key); got != want {
			t.Errorf("FieldName(%q) = %v", key, got)
		}
	}
}

func FuzzFind(f *testing.F) {
	for _, tt := range providerTokens {
		f.Add(tt.text)
	}
	f.Add("-----BEGIN RSA PRIVATE KEY-----")
	f.Add("a://b:c@d")
	f.Add(`gh''p_"R7kq2Vx9"\LmN4pT8wZc3Ya6Hd1Jf5Bs0Ge2Qu`)
	f.Fuzz(func(t *testing.T, s string) {
		last := 0
		for _, fd := range Find(s) {
			if fd.Start < last || fd.End <= fd.Start || fd.End > len(s) {
				t.Fatalf("finding %+v out of order or range in %q", fd, s)
			}
			last = fd.End
		}
	})
}

func BenchmarkFind(b *testing.B) {
	texts := []string{
		`git commit -m "fix the parser's handling of empty quotes" && git push origin main`,
		`curl -sS -H "Authorization: Bearer Zq8Lm3Xv9K2rW6nB4cJ1hD7p" https://api.example.com/v1/items?page=2`,
		`/Users/ada/Projects/site/src/components/Header.tsx`,
		fmt.Sprintf(`{"query": %q}`, strings.Repeat("SELECT id, name FROM users WHERE team = 'core' ", 20)),
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range texts {
			Find(s)
		}
	}
}

// fieldNamePattern is FieldName's specification; FieldName is held to it by the fuzz target
// below, without compiling it in every hook process.
var fieldNamePattern = regexp.MustCompile(`(?i)^(?:.*[_\-])?(?:password|passwd|passphrase|secret|client_secret|token|access_token|refresh_token|api_?key|apikey|private_?key|secret_?key|access_?key|credentials?|auth)$`)

func TestFieldNameNamesTheKeysOfSecrets(t *testing.T) {
	for _, k := range []string{"password", "DB_PASSWORD", "client_secret", "x-api-token", "apiKey", "api_key", "PRIVATE_KEY", "privatekey",
		"aws_secret_access_key", "credentials", "Credential", "auth", "proxy-auth", "\u212aey_api_\u212aey", "pa\u017f\u017fword"} {
		if !FieldName(k) {
			t.Errorf("FieldName(%q) = false, want true", k)
		}
	}
	for _, k := range []string{"key", "monkey_key", "api-key", "oauth", "tokens", "password_hint", "author", "x\n_token", "api\nkey", "passwords", "credentİal"} {
		if FieldName(k) {
			t.Errorf("FieldName(%q) = true, want false", k)
		}
	}
}

func FuzzFieldNameAgreesWithItsPattern(f *testing.F) {
	for _, k := range []string{"password", "x_api_key", "secret-key", "a\n_token", "\u212aey", "apikey", "_key", "access__key", "SECRET_KEY"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		if got, want := FieldName(k), fieldNamePattern.MatchString(k); got != want {
			t.Fatalf("FieldName(%q) = %v, its pattern says %v", k, got, want)
		}
	})
}

// BenchmarkRuleSet is what a process pays once for the rules in priority order, before its
// first scan (every hook process that writes a record pays it).
func BenchmarkRuleSet(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		newRuleSet()
	}
}

// BenchmarkRuleIndex is what the first scan of a text longer than shortText adds: the index of
// the rules' hints.
func BenchmarkRuleIndex(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		newRuleSet().buildIndex()
	}
}

// A short text's hints are looked for one by one and a long text's through the index: both
// mark the same rules, on every text of the corpus and every text the fuzzer makes.
func TestShortAndIndexedHintsMarkTheSameRules(t *testing.T) {
	for _, row := range readCorpus(t) {
		checkHintsAgree(t, row.Text)
	}
	checkHintsAgree(t, "export GITHUB_TOKEN=ghp_"+strings.Repeat("a", 40)+" && curl -H 'Authorization: Bearer x'")
}

func FuzzShortAndIndexedHintsAgree(f *testing.F) {
	f.Add("token=abc sk-ant-xyz AKIA")
	f.Fuzz(func(t *testing.T, s string) { checkHintsAgree(t, s) })
}

func checkHintsAgree(t *testing.T, text string) {
	t.Helper()
	short, indexed := newRuleSet(), newRuleSet()
	short.shortText, indexed.shortText = len(text), -1
	lower := asciiLower(text)
	if a, b := short.hinted(lower), indexed.hinted(lower); !slices.Equal(a, b) {
		t.Fatalf("%q: one by one %v, indexed %v", text, a, b)
	}
}

// A process that scans many texts (a daemon redacting every record) has them indexed once the
// first few were looked at one by one.
func TestTheIndexIsBuiltOnceAFewTextsWereScanned(t *testing.T) {
	rs := newRuleSet()
	for range shortScans {
		rs.hinted("git status")
	}
	if rs.pairs != nil {
		t.Fatal("the index was built for the first few short texts")
	}
	rs.hinted("git status")
	if rs.pairs == nil {
		t.Fatal("no index after more short texts than shortScans")
	}
}
