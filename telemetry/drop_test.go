package telemetry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func rid(c byte) string { return strings.Repeat(string(c), 32) }

func TestDroppedRecordsAreImportedUnderTheirFilesOwnerAndPlantsAreRemovedUnread(t *testing.T) {
	drop := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	must(t, os.WriteFile(outside, []byte(`{"rid":"`+rid('f')+`"}`), 0o600))
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	// The later one is dropped first: the import orders by time.
	must(t, Drop(drop, Record{RID: rid('b'), TS: t0.Add(time.Second), Tool: "Bash", User: "root", Transport: "vm-spool"}))
	must(t, Drop(drop, Record{RID: rid('a'), TS: t0, Tool: "Read"}))
	must(t, os.Symlink(outside, filepath.Join(drop, rid('c')+".json")))
	must(t, syscall.Mkfifo(filepath.Join(drop, rid('d')+".json"), 0o600))
	must(t, os.Link(outside, filepath.Join(drop, rid('f')+".json")))
	must(t, os.WriteFile(filepath.Join(drop, rid('e')+".json"), []byte(`{"rid":"`+rid('0')+`"}`), 0o600))
	must(t, os.WriteFile(filepath.Join(drop, "notes.txt"), []byte("x"), 0o600))

	logPath := filepath.Join(t.TempDir(), "decisions.jsonl")
	log := Open(Options{Path: logPath, Stamp: Stamp{Host: "mac-1"}})
	defer log.Close()
	im, err := log.ImportDropped(drop, func(uid uint32) string { return "alice" })
	if err != nil {
		t.Fatal(err)
	}
	if im.Records != 2 || len(im.Refused) != 5 {
		t.Fatalf("imported %d, refused %q; want 2 and 5", im.Records, im.Refused)
	}
	recs, err := ReadFile(logPath)
	if err != nil || len(recs) != 2 {
		t.Fatalf("log holds %d records (%v)", len(recs), err)
	}
	for i, want := range []string{rid('a'), rid('b')} {
		r := recs[i]
		if r.RID != want || r.User != "alice" || r.Transport != TransportDropped || r.Host != "mac-1" {
			t.Errorf("record %d = rid %s user %q transport %q host %q; want %s, alice (the file's owner), %s, mac-1",
				i, r.RID, r.User, r.Transport, r.Host, want, TransportDropped)
		}
	}
	if left, _ := os.ReadDir(drop); len(left) != 0 {
		t.Errorf("files left in the drop folder: %v", left)
	}
	if b, err := os.ReadFile(outside); err != nil || !json.Valid(b) {
		t.Errorf("the file a planted link pointed to was changed or removed: %q %v", b, err)
	}
}

func TestDroppedRecordsStayWhenTheLogCannotBeWritten(t *testing.T) {
	drop := t.TempDir()
	must(t, Drop(drop, Record{RID: rid('a'), Tool: "Read"}))
	blocker := filepath.Join(t.TempDir(), "file")
	must(t, os.WriteFile(blocker, nil, 0o600))
	log := Open(Options{Path: filepath.Join(blocker, "logs", "d.jsonl")})
	defer log.Close()
	if _, err := log.ImportDropped(drop, func(uint32) string { return "" }); err == nil {
		t.Fatal("an import into an unwritable log reported success")
	}
	if _, err := os.Stat(filepath.Join(drop, rid('a')+".json")); err != nil {
		t.Fatalf("the dropped record is gone after a failed import: %v", err)
	}
}

func TestDropRefusesANameThatIsNotARequestID(t *testing.T) {
	for _, bad := range []string{"", "../x", rid('a') + "/../../y", strings.Repeat("g", 32)} {
		if err := Drop(t.TempDir(), Record{RID: bad}); err == nil {
			t.Errorf("Drop accepted request id %q", bad)
		}
	}
}

func FuzzReadDropped(f *testing.F) {
	f.Add([]byte(`{"rid":"` + rid('a') + `","tool":"Bash","input":{"command":"ls"}}`))
	f.Add([]byte(`{"rid":5}`))
	f.Add([]byte("\x00\xff"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		name := filepath.Join(dir, rid('a')+".json")
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
		rec, why := readDropped(name, func(uint32) string { return "u" })
		if why == "" && (rec.RID != rid('a') || rec.Transport != TransportDropped || rec.User != "u") {
			t.Fatalf("accepted a record not of its name or owner: %+v", rec)
		}
	})
}
