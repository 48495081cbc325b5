package telemetry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// completeLines checks that the log holds whole JSON lines only and returns their request ids.
func completeLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("the log ends in a torn line: %q", data[max(0, len(data)-80):])
	}
	var rids []string
	for line := range bytes.Lines(data) {
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("a line that is not one record (%v): %.120q", err, line)
		}
		rids = append(rids, r.RID)
	}
	return rids
}

func rec(i int) Record {
	return Record{TS: time.Unix(1, 0), RID: fmt.Sprintf("%032x", i), Session: "s", Tool: "Bash",
		Input: json.RawMessage(`{"command":"` + strings.Repeat("x", 300) + `"}`), Decision: "allow"}
}

// Another process (a hook on the Mac) killed mid-write leaves part of a line this writer knows
// nothing of: the next record must not be glued to it, and the fragment stays for Verify.
func TestARecordWrittenAfterAnotherWritersTornLineIsALineOfItsOwn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	l, other := Open(Options{Path: path}), Open(Options{Path: path})
	defer l.Close()
	defer other.Close()
	if err := l.WriteBatch([]Record{rec(1)}); err != nil {
		t.Fatal(err)
	}
	if err := other.WriteBatch([]Record{rec(2)}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"ts":"1970-01-01T00:00:01Z","rid":"00000000000000000000000000000003","sess`)
	f.Close()
	if err := l.WriteBatch([]Record{rec(4)}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	var rids []string
	for line := range bytes.Lines(data) {
		var r Record
		if json.Unmarshal(line, &r) == nil {
			rids = append(rids, r.RID)
		}
	}
	if want := []string{fmt.Sprintf("%032x", 1), fmt.Sprintf("%032x", 2), fmt.Sprintf("%032x", 4)}; !slices.Equal(rids, want) {
		t.Errorf("records read back %v, want %v", rids, want)
	}
	v, err := Verify([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	if v.Broken == nil {
		t.Error("the fragment left in the chain was not reported by Verify")
	}
}

func TestATornLineLeftByAFailedWriteIsCutBeforeTheNextWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	l := Open(Options{Path: path})
	defer l.Close()
	if err := l.WriteBatch([]Record{rec(1)}); err != nil {
		t.Fatal(err)
	}
	// What a write cut short by a full disk leaves: part of a line.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"ts":"1970-01-01T00:00:01Z","rid":"00000000000000000000000000000002","sess`)
	f.Close()
	l.torn = true
	if err := l.WriteBatch([]Record{rec(2), rec(3)}); err != nil {
		t.Fatal(err)
	}
	if rids := completeLines(t, path); len(rids) != 3 {
		t.Errorf("rids %v, want 3 whole records", rids)
	}
}

// A real full disk (a 64 KiB tmpfs): writes fail part-way, and once space is freed the next
// records go in whole after the last complete line: none glued to a fragment, none lost.
func TestAFullDiskLeavesTheLogLineAligned(t *testing.T) {
	dir := t.TempDir()
	if err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "coworkbridge-test", dir).Run(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (needs root): %v", err)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	ballast := filepath.Join(dir, "ballast")
	os.WriteFile(ballast, bytes.Repeat([]byte("b"), 32<<10), 0o600)
	path := filepath.Join(dir, "decisions.jsonl")
	l := Open(Options{Path: path})
	defer l.Close()
	written, failed := 0, 0
	for i := 1; i <= 200 && failed < 3; i++ {
		if err := l.WriteBatch([]Record{rec(i)}); err != nil {
			failed++
			continue
		}
		written++
	}
	if failed == 0 {
		t.Fatal("the disk never filled; the test proves nothing")
	}
	os.Remove(ballast) // the admin frees space
	for i := 1000; i < 1010; i++ {
		if err := l.WriteBatch([]Record{rec(i)}); err != nil {
			t.Fatalf("after space was freed: %v", err)
		}
	}
	if rids := completeLines(t, path); len(rids) != written+10 {
		t.Errorf("%d whole records, want the %d written before and the 10 after", len(rids), written)
	}
}
