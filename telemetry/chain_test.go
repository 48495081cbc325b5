package telemetry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/ruleid"
)

func chained(i int, d claudehook.Decision, session string) Record {
	return Record{TS: time.Unix(int64(i), 0), RID: fmt.Sprintf("%032x", i), Session: session, Tool: "Bash",
		Input: json.RawMessage(fmt.Sprintf(`{"command":"echo %d"}`, i)), Decision: d}
}

func writeN(t *testing.T, l *Log, from, n int, d claudehook.Decision, session string) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := l.Write(chained(i, d, session)); err != nil {
			t.Fatal(err)
		}
	}
}

func mustVerify(t *testing.T, files []string, heads ...string) Verification {
	t.Helper()
	v, err := Verify(files, heads...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func lines(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(data, []byte("\n"))[:bytes.Count(data, []byte("\n"))]
}

func TestEveryRecordLinksToTheLineBeforeItAcrossWritersAndRotations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	daemon := Open(Options{Path: path, MaxFileBytes: 4 << 10, MaxFiles: 20})
	hook := Open(Options{Path: path, MaxFileBytes: 4 << 10, MaxFiles: 20}) // another process
	for i := range 60 {
		w := daemon
		if i%3 == 0 {
			w = hook
		}
		if i%10 == 0 {
			if err := w.WriteBatch([]Record{chained(1000+i, claudehook.Allow, "a"), chained(2000+i, claudehook.Deny, "a")}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		writeN(t, w, i, 1, claudehook.Allow, "a")
	}
	files := Files(path)
	if len(files) < 3 {
		t.Fatalf("expected rotations, got %v", files)
	}
	v := mustVerify(t, files)
	if v.Broken != nil || v.Records != 66 || v.Unchained != 0 {
		t.Fatalf("verification %+v, want 66 records and no break", v)
	}
	if head, _ := fileHead(path); v.Head != head || head == "" {
		t.Errorf("head %q, the live file's last line hashes to %q", v.Head, head)
	}
	first := lines(t, files[0])[0]
	if link, _ := linkOf(first); link != genesis {
		t.Errorf("the first record of a new log links to %q, want the genesis link", link)
	}
}

func TestVerifyNamesTheFirstBrokenLink(t *testing.T) {
	for _, tt := range []struct {
		name     string
		edit     func(ls [][]byte) [][]byte
		wantLine int
		want     string
	}{
		{"a record cut", func(ls [][]byte) [][]byte { return append(ls[:3:3], ls[4:]...) }, 4, "does not follow the line before it"},
		{"a deny turned into an allow", func(ls [][]byte) [][]byte {
			ls[5] = bytes.Replace(ls[5], []byte(`"deny"`), []byte(`"allow"`), 1)
			return ls
		}, 7, "does not follow the line before it"},
		{"a record inserted", func(ls [][]byte) [][]byte {
			forged := withPrev(bytes.TrimPrefix(unlinked(ls[2]), nil), LineHash(ls[2]))
			return append(ls[:3:3], append([][]byte{forged}, ls[3:]...)...)
		}, 5, "does not follow the line before it"},
		{"two records swapped", func(ls [][]byte) [][]byte { ls[2], ls[3] = ls[3], ls[2]; return ls }, 3, "does not follow"},
		{"a link stripped", func(ls [][]byte) [][]byte { ls[4] = unlinked(ls[4]); return ls }, 5, "without its link"},
		{"garbage", func(ls [][]byte) [][]byte { ls[6] = []byte("rm -rf ~ was never here\n"); return ls }, 7, "not a record"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "decisions.jsonl")
			l := Open(Options{Path: path})
			writeN(t, l, 0, 10, claudehook.Deny, "a")
			os.WriteFile(path, bytes.Join(tt.edit(lines(t, path)), nil), 0o600)
			v := mustVerify(t, []string{path})
			if v.Broken == nil {
				t.Fatalf("no break found: %+v", v)
			}
			if v.Broken.Line != tt.wantLine || !strings.Contains(v.Broken.Problem, tt.want) || v.Broken.File != path {
				t.Errorf("break %v, want line %d: %q", v.Broken, tt.wantLine, tt.want)
			}
		})
	}
}

func TestVerifyFindsACutAtARotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	l := Open(Options{Path: path, MaxFileBytes: 2 << 10, MaxFiles: 10})
	writeN(t, l, 0, 30, claudehook.Allow, "a")
	files := Files(path)
	older := lines(t, files[1])
	os.WriteFile(files[1], bytes.Join(older[:len(older)-1], nil), 0o600) // its last record removed
	v := mustVerify(t, files)
	if v.Broken == nil || v.Broken.File != files[2] || v.Broken.Line != 1 || !strings.Contains(v.Broken.Problem, "rotation") {
		t.Fatalf("break %v, want the first line of %s", v.Broken, files[2])
	}
}

func TestARewrittenChainDoesNotHoldThePublishedHead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	l := Open(Options{Path: path})
	writeN(t, l, 0, 5, claudehook.Deny, "a")
	published, _, err := l.Check()
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, l, 5, 3, claudehook.Allow, "a")
	// The agent drops record 2 and relinks every later one: the chain holds, the head it published
	// is gone.
	ls := lines(t, path)
	ls = append(ls[:2:2], ls[3:]...)
	prev := LineHash(ls[1])
	for i := 2; i < len(ls); i++ {
		ls[i] = withPrev(unlinked(ls[i]), prev)
		prev = LineHash(ls[i])
	}
	os.WriteFile(path, bytes.Join(ls, nil), 0o600)
	v := mustVerify(t, []string{path}, published.Hash)
	if v.Broken != nil {
		t.Fatalf("a consistent rewrite breaks no link, got %v", v.Broken)
	}
	if len(v.MissingHeads) != 1 || v.MissingHeads[0] != published.Hash {
		t.Errorf("missing heads %v, want the published %s", v.MissingHeads, published.Hash)
	}
	if v := mustVerify(t, []string{path}, prev); len(v.MissingHeads) != 0 {
		t.Errorf("the chain's own head reported missing: %v", v.MissingHeads)
	}
}

func TestTheWriterNoticesWhatWasDoneToItsLastRecord(t *testing.T) {
	for _, tt := range []struct {
		name   string
		tamper func(t *testing.T, path string)
		want   string
	}{
		{"cut", func(t *testing.T, path string) {
			ls := lines(t, path)
			os.WriteFile(path, bytes.Join(ls[:len(ls)-1], nil), 0o600)
		}, "was cut from"},
		{"edited and relinked", func(t *testing.T, path string) {
			ls := lines(t, path)
			last := len(ls) - 1
			ls[last] = bytes.Replace(ls[last], []byte(`"deny"`), []byte(`"ask"`), 1) // same length
			f, _ := os.OpenFile(path, os.O_WRONLY, 0)
			f.WriteAt(bytes.Join(ls, nil), 0)
			f.Close()
		}, "was changed"},
		{"joined to the record before", func(t *testing.T, path string) {
			ls := lines(t, path)
			ls[len(ls)-2] = append(bytes.TrimSuffix(ls[len(ls)-2], []byte("\n")), ' ') // same length
			os.WriteFile(path, bytes.Join(ls, nil), 0o600)
		}, "was changed"},
		{"its newline overwritten", func(t *testing.T, path string) {
			ls := lines(t, path)
			last := len(ls) - 1
			ls[last] = append(bytes.TrimSuffix(ls[last], []byte("\n")), ' ')
			os.WriteFile(path, bytes.Join(ls, nil), 0o600)
		}, "was changed"},
		{"replaced", func(t *testing.T, path string) {
			os.Remove(path)
			os.WriteFile(path, nil, 0o600)
		}, "removed or replaced"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "decisions.jsonl")
			var got []string
			l := Open(Options{Path: path, MaxFiles: 5, OnBreak: func(p string) { got = append(got, p) }})
			writeN(t, l, 0, 3, claudehook.Deny, "a")
			tt.tamper(t, path)
			writeN(t, l, 3, 1, claudehook.Deny, "a")
			if len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Fatalf("breaks told %q, want one saying %q", got, tt.want)
			}
			writeN(t, l, 4, 1, claudehook.Deny, "a")
			if len(got) != 1 {
				t.Errorf("a break is told once, got %q", got)
			}
		})
	}
}

func TestOtherWritersAndRotationsAreNoBreak(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	var got []string
	o := Options{Path: path, MaxFileBytes: 2 << 10, MaxFiles: 4, OnBreak: func(p string) { got = append(got, p) }}
	daemon, hook := Open(o), Open(Options{Path: path, MaxFileBytes: 2 << 10, MaxFiles: 4})
	for i := range 40 {
		writeN(t, daemon, 2*i, 1, claudehook.Allow, "a")
		writeN(t, hook, 2*i+1, 1, claudehook.Allow, "a") // rotates under the daemon now and then
	}
	if _, problem, err := daemon.Check(); err != nil || problem != "" {
		t.Fatalf("check: %q %v", problem, err)
	}
	if len(got) != 0 {
		t.Errorf("breaks told for honest writers: %q", got)
	}
}

func TestDeniesOutliveAFloodOfAnotherSessionsAllows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	l := Open(Options{Path: path, MaxFileBytes: 4 << 10, MaxFiles: 3})
	writeN(t, l, 0, 5, claudehook.Deny, "victim")
	writeN(t, l, 5, 2, claudehook.Ask, "victim")
	if err := l.Write(Record{RID: fmt.Sprintf("%032x", 7), Session: "victim", Decision: claudehook.Allow, Rule: "coworkbridge.unguarded-call"}); err != nil {
		t.Fatal(err)
	}
	writeN(t, l, 100, 400, claudehook.Allow, "flood") // many times what the log keeps
	var inLog, kept int
	for _, name := range Files(path) {
		rs, _ := ReadFile(name)
		for _, r := range rs {
			if r.Session == "victim" {
				inLog++
			}
		}
	}
	kept2, err := ReadFile(RetainedPath(path))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range kept2 {
		if r.Session == "flood" && r.Rule != ruleid.Evicted {
			t.Fatalf("a routine allow was kept apart: %+v", r)
		}
		if r.Session == "flood" {
			continue // what the flood lost, recorded
		}
		if seen[r.RID] {
			t.Fatalf("record %s kept twice", r.RID)
		}
		seen[r.RID] = true
		kept++
	}
	if inLog != 0 || kept != 8 {
		t.Fatalf("victim's records: %d still in the log, %d kept apart; want 0 and 8", inLog, kept)
	}
	if v := mustVerify(t, Files(RetainedPath(path))); v.Broken != nil || v.Records != len(kept2) {
		t.Errorf("the retained log's chain: %+v", v)
	}
}

func TestMovingRetainedRecordsTwiceKeepsThemOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	l := Open(Options{Path: path, MaxFiles: 3})
	writeN(t, l, 0, 4, claudehook.Deny, "a")
	writeN(t, l, 4, 4, claudehook.Allow, "a")
	// A crash after the move and before the drop: the next rotation moves the same file again.
	for range 2 {
		if _, _, err := l.retain(path); err != nil {
			t.Fatal(err)
		}
	}
	kept, _ := ReadFile(RetainedPath(path))
	if len(kept) != 4 {
		t.Fatalf("%d records kept, want the 4 denies once each", len(kept))
	}
}

func TestRecordsFromBeforeTheChainAreCountedNotBroken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	old := `{"schema":2,"ts":"2026-01-01T00:00:00Z","rid":"a","decision":"allow"}` + "\n"
	os.WriteFile(path, []byte(old+old), 0o600)
	writeN(t, Open(Options{Path: path}), 0, 3, claudehook.Allow, "a")
	v := mustVerify(t, []string{path})
	if v.Broken != nil || v.Unchained != 2 || v.Records != 3 {
		t.Fatalf("verification %+v, want 2 unchained, 3 chained, no break", v)
	}
}

func FuzzVerify(f *testing.F) {
	path := filepath.Join(f.TempDir(), "seed.jsonl")
	l := Open(Options{Path: path})
	for i := range 4 {
		l.Write(chained(i, claudehook.Deny, "a"))
	}
	seed, _ := os.ReadFile(path)
	f.Add(seed)
	f.Add([]byte("{\"prev\":\"00000000000000000000000000000000\",}\n\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		name := filepath.Join(t.TempDir(), "d.jsonl")
		os.WriteFile(name, data, 0o600)
		v, err := Verify([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		if v.Broken == nil && bytes.Equal(data, seed) && v.Records != 4 {
			t.Fatalf("the writer's own chain: %+v", v)
		}
		if v.Broken != nil && v.Broken.Line < 1 {
			t.Fatalf("a break with no line: %+v", v.Broken)
		}
	})
}

func TestTheGenesisLinkIsAHashOfZeros(t *testing.T) {
	if genesis != strings.Repeat("0", 2*hashLen) {
		t.Errorf("genesis is %q, want %d zeros (a hash's length in hex)", genesis, 2*hashLen)
	}
}
