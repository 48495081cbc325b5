package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

func TestReportReadsALogWithItsRotatedFiles(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "decisions.jsonl")
	rec := func(rid, decision string) string {
		return `{"schema":2,"ts":"2026-11-20T10:00:00Z","rid":"` + rid + `","session":"local_a","agent":"cowork","transport":"vm-spool","mode":"observe","enforced":false,"tool":"Bash","input":null,"decision":"` + decision + `","rule":"bash.rm-critical","latency_us":1,"host":"mac-a"}` + "\n"
	}
	os.WriteFile(live+".2", []byte(rec("01", "deny")), 0o600)
	os.WriteFile(live+".1", []byte(rec("02", "deny")+rec("01", "deny")), 0o600) // a record shipped twice
	os.WriteFile(live, []byte(rec("03", "allow")), 0o600)
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"report", "--json", live}, stdio{out: &out, err: &errb}); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct {
		Files      []string
		Records    int
		Duplicates int
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Records != 3 || got.Duplicates != 1 || len(got.Files) != 3 || !strings.HasSuffix(got.Files[0], ".2") {
		t.Errorf("report %+v, want 3 records from the three files, oldest first, one duplicate", got)
	}
	page := filepath.Join(dir, "r.html")
	out.Reset()
	if code := dispatch(context.Background(), []string{"report", "--html", page, live}, stdio{out: &out, err: &errb}); code != exitOK {
		t.Fatalf("--html: exit %d: %s", code, errb.String())
	}
	if data, err := os.ReadFile(page); err != nil || !bytes.Contains(data, []byte("<svg")) {
		t.Errorf("--html wrote no page with charts: %v", err)
	}
}

func TestReportUsageErrorsExit64(t *testing.T) {
	for _, args := range [][]string{{"report"}, {"report", "--top", "0", "x"}, {"report", "--json", "--html", "p.html", "x"}} {
		var out, errb bytes.Buffer
		if code := dispatch(context.Background(), args, stdio{out: &out, err: &errb}); code != exitUsage || errb.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
	var errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"report", filepath.Join(t.TempDir(), "none.jsonl")}, stdio{out: &bytes.Buffer{}, err: &errb}); code != exitFail || !strings.Contains(errb.String(), "open decision log") {
		t.Errorf("a missing log: exit %d, %q", code, errb.String())
	}
}

func writeChained(t *testing.T, path string, from, n int, decision claudehook.Decision) {
	t.Helper()
	l := telemetry.Open(telemetry.Options{Path: path})
	defer l.Close()
	for i := from; i < from+n; i++ {
		err := l.Write(telemetry.Record{TS: time.Date(2026, 11, 20, 10, i, 0, 0, time.UTC), RID: fmt.Sprintf("%032x", i+1), Session: "local_a",
			Agent: "cowork", Transport: "vm-spool", Mode: "enforce", Enforced: true, Tool: "Bash", Decision: decision, Rule: "bash.rm-critical", Host: "mac-a"})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestReportNamesTheFirstBrokenLinkAndExits1(t *testing.T) {
	live := filepath.Join(t.TempDir(), "decisions.jsonl")
	writeChained(t, live, 0, 6, claudehook.Deny)
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"report", live}, stdio{out: &out, err: &errb}); code != exitOK ||
		!strings.Contains(out.String(), "chain whole, 6 records") {
		t.Fatalf("an intact log: exit %d\n%s%s", code, out.String(), errb.String())
	}
	data, _ := os.ReadFile(live)
	lines := strings.SplitAfter(string(data), "\n")
	os.WriteFile(live, []byte(strings.Join(append(lines[:2:2], lines[3:]...), "")), 0o600) // the third deny cut
	out.Reset()
	code := dispatch(context.Background(), []string{"report", live}, stdio{out: &out, err: &errb})
	if code != exitFail || !strings.Contains(out.String(), "CHAIN BROKEN at "+live+" line 3 (record "+fmt.Sprintf("%032x", 4)+")") {
		t.Errorf("a record cut: exit %d\n%s", code, out.String())
	}
}

func TestReportChecksThePublishedHeadAndReadsTheRetainedLog(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "decisions.jsonl")
	writeChained(t, telemetry.RetainedPath(live), 0, 2, claudehook.Deny)
	writeChained(t, live, 10, 3, claudehook.Allow)
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"report", "--json", "--head", "0123456789abcdef0123456789abcdef", live}, stdio{out: &out, err: &errb})
	var got struct {
		Records   int
		Totals    struct{ Deny int }
		Integrity []struct {
			Log          string
			Records      int
			MissingHeads []string `json:"missing_heads"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err, out.String())
	}
	if code != exitFail || len(got.Integrity) != 2 || len(got.Integrity[1].MissingHeads) != 1 {
		t.Errorf("a head the log does not hold: exit %d, integrity %+v", code, got.Integrity)
	}
	if got.Records != 5 || got.Totals.Deny != 2 {
		t.Errorf("records %d, denies %d: want the retained log's 2 denies among 5 records", got.Records, got.Totals.Deny)
	}
}

// A file with no record in it, an empty one included, is a wrong file, not a quiet fleet: report
// says so and fails.
func TestReportOfAFileWithNoRecordFails(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(garbage, []byte("hello\nthis is not a log\n{\"half\n"), 0o600)
	code, _, errOut := runCLI(t, "", "report", garbage)
	if code != exitFail || !strings.Contains(errOut, "none of the 3 lines read is a decision-log record") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	empty := filepath.Join(t.TempDir(), "decisions.jsonl")
	os.WriteFile(empty, nil, 0o600)
	if code, _, errOut := runCLI(t, "", "report", empty); code != exitFail || !strings.Contains(errOut, "holds no decision-log records (empty)") {
		t.Errorf("an empty file: exit %d: %s", code, errOut)
	}
}
