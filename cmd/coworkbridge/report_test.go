package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
