package telemetry

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

type secretCase struct {
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	Secret string `json:"secret"`
}

func secretCorpus(t testing.TB) []secretCase {
	t.Helper()
	f, err := os.Open("testdata/secrets.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []secretCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c secretCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func TestRedactCatchesEachKind(t *testing.T) {
	kinds := map[string]bool{}
	for _, c := range secretCorpus(t) {
		kinds[c.Kind] = true
		got := Redact(c.Text)
		if strings.Contains(got, c.Secret) {
			t.Errorf("%s: secret survived in %q", c.Kind, got)
		}
		if !strings.Contains(got, "[REDACTED:"+c.Kind+"]") {
			t.Errorf("%s: %q not named as %s", c.Kind, got, c.Kind)
		}
	}
	for _, k := range []string{"private-key", "aws-access-token", "aws-secret-access-key", "github-pat", "gitlab-pat", "slack-bot-token",
		"slack-webhook-url", "stripe-access-token", "openai-api-key", "anthropic-api-key", "jwt", "bearer-token", "url-password", "assigned-secret"} {
		if !kinds[k] {
			t.Errorf("the corpus has no %s case", k)
		}
	}
}

func TestRedactLeavesOrdinaryTextAlone(t *testing.T) {
	data, err := os.ReadFile("testdata/clean.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if got := Redact(line); got != line {
			t.Errorf("changed ordinary text:\n  in  %q\n  out %q", line, got)
		}
	}
}

func TestEncodeRedactsTruncatesAndKeepsShape(t *testing.T) {
	l := Open(Options{Path: filepath.Join(t.TempDir(), "d.jsonl"), Redact: true})
	long := strings.Repeat("é", 3000) // 6000 bytes, cut on a character boundary
	input := `{"command":"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY aws s3 ls","timeout":120000,` +
		`"env":{"password":"hunter2","user":"ada"},"content":"` + long + `","n":12345678901234567890}`
	line, err := l.Encode(Record{TS: time.Unix(0, 0), RID: "r", Tool: "Bash", Input: json.RawMessage(input),
		Reason: "blocked: curl -H 'Authorization: Bearer abcdefgh12345678' ..."})
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Input struct {
			Command string            `json:"command"`
			Timeout json.Number       `json:"timeout"`
			Env     map[string]string `json:"env"`
			Content string            `json:"content"`
			N       json.Number       `json:"n"`
		} `json:"input"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatalf("line is not JSON: %v\n%s", err, line)
	}
	in := rec.Input
	if strings.Contains(in.Command, "wJalr") || !strings.Contains(in.Command, "aws s3 ls") {
		t.Errorf("command %q", in.Command)
	}
	if in.Env["password"] != "[REDACTED:secret-field]" || in.Env["user"] != "ada" {
		t.Errorf("env %v", in.Env)
	}
	if !strings.HasSuffix(in.Content, "…[truncated 1904 bytes]") || len(in.Content) > MaxStringBytes+40 {
		t.Errorf("content not truncated as expected: %d bytes, ends %q", len(in.Content), in.Content[len(in.Content)-30:])
	}
	if in.Timeout != "120000" || in.N != "12345678901234567890" {
		t.Errorf("numbers changed: %s %s", in.Timeout, in.N)
	}
	if strings.Contains(rec.Reason, "abcdefgh12345678") {
		t.Errorf("reason not redacted: %q", rec.Reason)
	}
}

func TestEncodeKeepsInputThatIsNotJSONAsARedactedString(t *testing.T) {
	l := Open(Options{Redact: true})
	line, _ := l.Encode(Record{Input: json.RawMessage(`not json ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s0K`)})
	if strings.Contains(string(line), "ghp_R4nd0m") || !strings.Contains(string(line), `"input":"not json [REDACTED:github-pat]"`) {
		t.Errorf("%s", line)
	}
}

func TestRedactionCanBeSwitchedOff(t *testing.T) {
	l := Open(Options{Redact: false})
	line, _ := l.Encode(Record{Input: json.RawMessage(`{"password":"hunter2","c":"AKIAIOSFODNN7EXAMPLE"}`)})
	if !strings.Contains(string(line), "hunter2") || !strings.Contains(string(line), "AKIAIOSFODNN7EXAMPLE") {
		t.Errorf("%s", line)
	}
}

func readAll(t *testing.T, dir string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(dir, "d.jsonl*"))
	for _, f := range files {
		if strings.HasSuffix(f, ".lock") {
			continue
		}
		fi, _ := os.Stat(f)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
		data, _ := os.ReadFile(f)
		for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if line == "" {
				continue
			}
			var r Record
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s: damaged line %q", f, line)
			}
			seen[r.RID]++
		}
	}
	return seen
}

func TestRotationKeepsAtMostMaxFiles(t *testing.T) {
	dir := t.TempDir()
	l := Open(Options{Path: filepath.Join(dir, "d.jsonl"), MaxFileBytes: 2000, MaxFiles: 3})
	for i := range 200 {
		if err := l.Write(Record{RID: fmt.Sprintf("r%03d", i), Input: json.RawMessage(`{"command":"ls"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "d.jsonl*"))
	var logs []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".lock") {
			logs = append(logs, filepath.Base(f))
		}
	}
	if strings.Join(logs, ",") != "d.jsonl,d.jsonl.1,d.jsonl.2" {
		t.Fatalf("files %v", logs)
	}
	for _, f := range logs {
		if fi, _ := os.Stat(filepath.Join(dir, f)); fi.Size() > 2000 {
			t.Errorf("%s is %d bytes, over the limit", f, fi.Size())
		}
	}
	seen := readAll(t, dir)
	if seen["r199"] != 1 || seen["r000"] != 0 {
		t.Errorf("newest must be kept and oldest dropped: %v", seen)
	}
}

// writerEnv makes the test binary act as a second process writing records.
const writerEnv = "TELEMETRY_TEST_WRITER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(writerEnv); spec != "" {
		path, n, _ := strings.Cut(spec, "|")
		count, _ := strconv.Atoi(n)
		l := Open(Options{Path: path, MaxFileBytes: 64 << 10, MaxFiles: 1000, Redact: true, LockWait: concurrentLockWait})
		for i := range count {
			if err := l.Write(Record{RID: fmt.Sprintf("proc-%d", i), Input: json.RawMessage(`{"command":"echo from a hook process"}`)}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Many goroutines and a second process write at once, through rotations: every record arrives
// exactly once and every line is whole.
func TestConcurrentWritersAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d.jsonl")
	exe, _ := os.Executable()
	other := exec.Command(exe)
	other.Env = append(os.Environ(), writerEnv+"="+path+"|1500")
	var otherOut strings.Builder
	other.Stderr = &otherOut
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	l := Open(Options{Path: path, MaxFileBytes: 64 << 10, MaxFiles: 1000, Redact: true, LockWait: concurrentLockWait})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 250 {
				big := strings.Repeat("x", (i%7)*500)
				if err := l.Write(Record{RID: fmt.Sprintf("g%d-%d", g, i), Input: json.RawMessage(`{"content":"` + big + `"}`)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := other.Wait(); err != nil {
		t.Fatalf("second process: %v %s", err, otherOut.String())
	}
	l.Close()
	seen := readAll(t, dir)
	if len(seen) != 8*250+1500 {
		t.Errorf("%d distinct records, want %d", len(seen), 8*250+1500)
	}
	for rid, n := range seen {
		if n != 1 {
			t.Errorf("record %s written %d times", rid, n)
		}
	}
}

func TestFailedWritesAreCountedNotFatal(t *testing.T) {
	tests := map[string]func(t *testing.T) string{
		"folder cannot be created": func(t *testing.T) string {
			blocker := filepath.Join(t.TempDir(), "file")
			os.WriteFile(blocker, nil, 0o600)
			return filepath.Join(blocker, "logs", "d.jsonl")
		},
		"a device at the log's name (never renamed away)": func(t *testing.T) string {
			if _, err := os.Stat("/dev/full"); err != nil {
				t.Skip("no /dev/full")
			}
			return "/dev/full"
		},
	}
	for name, path := range tests {
		t.Run(name, func(t *testing.T) {
			p := path(t)
			before, _ := os.Lstat(p)
			if _, err := os.Lstat(p + ".lock"); err != nil {
				t.Cleanup(func() { os.Remove(p + ".lock") }) // the lock file the writer made beside it
			}
			l := Open(Options{Path: p})
			for range 3 {
				if err := l.Write(Record{RID: "x"}); err == nil {
					t.Fatal("write succeeded")
				}
			}
			if l.Failures() != 3 {
				t.Errorf("failures %d, want 3", l.Failures())
			}
			if after, _ := os.Lstat(p); before != nil && (after == nil || !os.SameFile(before, after)) {
				t.Errorf("%s was replaced by the writer", p)
			}
		})
	}
}

func FuzzRedactNeverEmitsAKnownSecret(f *testing.F) {
	cases := secretCorpus(f)
	f.Add("", "", uint8(0))
	f.Add("Bearer", "=x", uint8(3))
	f.Add("-----BEGIN", "'\"", uint8(9))
	f.Fuzz(func(t *testing.T, prefix, suffix string, pick uint8) {
		c := cases[int(pick)%len(cases)]
		out := Redact(prefix + " " + c.Text + " " + suffix)
		if strings.Contains(out, c.Secret) && !strings.Contains(prefix+suffix, c.Secret) {
			t.Fatalf("secret %q survived:\n%q", c.Secret, out)
		}
	})
}

func BenchmarkWriteWithRedaction(b *testing.B) {
	l := Open(Options{Path: filepath.Join(b.TempDir(), "d.jsonl"), MaxFileBytes: 50 << 20, MaxFiles: 5, Redact: true})
	defer l.Close()
	inputs := []json.RawMessage{
		json.RawMessage(`{"command":"git status && npm test -- --watch=false","description":"run tests"}`),
		json.RawMessage(`{"file_path":"/sessions/x/mnt/outputs/report.md","content":"` + strings.Repeat("Quarterly numbers are up. ", 80) + `"}`),
		json.RawMessage(`{"command":"curl -H 'Authorization: Bearer 8f3a9c2e7d1b4f6a0e5c9d8b7a6f5e4d' https://api.example.com"}`),
	}
	b.ResetTimer()
	for i := range b.N {
		if err := l.Write(Record{TS: time.Now(), RID: "0123456789abcdef0123456789abcdef", Session: "local_x", Agent: "cowork",
			Transport: TransportSpool, Mode: "enforce", Tool: "Bash", Input: inputs[i%len(inputs)], Decision: "allow"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func TestWriteBatchAppendsEveryRecordAndRecentRIDsReadsThemBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	l := Open(Options{Path: path, MaxFileBytes: 4096, MaxFiles: 3})
	defer l.Close()
	var want []string
	for batch := range 10 {
		var rs []Record
		for i := range 5 {
			rid := fmt.Sprintf("%030x%02x", batch, i)
			want = append(want, rid)
			rs = append(rs, Record{RID: rid, Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`), Decision: "allow"})
		}
		if err := l.WriteBatch(rs); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path + ".1"); err != nil {
		t.Fatalf("the log should have rotated: %v", err)
	}
	got, err := RecentRIDs(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	// Everything in the live file and the newest rotated one; older ones may be beyond.
	for _, rid := range want[len(want)-10:] {
		if !got[rid] {
			t.Errorf("recent rids miss %s", rid)
		}
	}
	small, err := RecentRIDs(path, 300)
	if err != nil {
		t.Fatal(err)
	}
	if len(small) == 0 || len(small) >= len(got) {
		t.Errorf("a 300-byte tail gave %d rids of %d; it must be bounded and skip the cut line", len(small), len(got))
	}
}

func TestRecentRIDsOfAMissingLogIsEmpty(t *testing.T) {
	got, err := RecentRIDs(filepath.Join(t.TempDir(), "none.jsonl"), 1<<20)
	if err != nil || len(got) != 0 {
		t.Errorf("RecentRIDs = %v, %v", got, err)
	}
}

// A secret the written content breaks across lines is hidden whole, both halves and the break,
// in every corpus case whose secret is long enough to break; ordinary multi-line text is left
// as it was.
func TestRedactHidesASecretBrokenAcrossLines(t *testing.T) {
	for _, c := range secretCorpus(t) {
		if len(c.Secret) < 16 || strings.ContainsAny(c.Secret, "\r\n") {
			continue
		}
		half := len(c.Secret) / 2
		text := strings.Replace(c.Text, c.Secret, c.Secret[:half]+"\n"+c.Secret[half:], 1)
		got := Redact(text)
		if strings.Contains(got, c.Secret[:half]) || strings.Contains(got, c.Secret[half:]) {
			t.Errorf("%s: a half survived in %q", c.Kind, got)
		}
	}
	clean, err := os.ReadFile("testdata/clean.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := Redact(string(clean)); got != string(clean) {
		t.Errorf("ordinary lines, read together, changed:\n%s", got)
	}
}

// concurrentLockWait is the lock wait of the concurrent writers' test: what it checks is that
// every record arrives once and whole, not how long nine writers wait on a loaded machine (at the
// default 250 ms it failed 2 runs in 6 beside another test run).
const concurrentLockWait = 10 * time.Second
