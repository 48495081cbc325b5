package telemetry

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// follower reads a log as log shippers do (the OpenTelemetry filelog receiver with include
// decisions.jsonl*, Fluent Bit's tail, Vector's file source, Splunk's monitor): every file of the
// rotation set is known by a fingerprint of its first bytes, not its name, with the offset read
// so far; each poll reads the new whole lines of each file, oldest file first. A rename changes
// nothing for it, and a file rotated twice between two polls is still read.
type follower struct {
	path  string
	files map[string]int64 // fingerprint → offset of the first byte not yet read
	// rotations counts the files it saw move aside.
	rotations int
	names     map[string]string // fingerprint → the name it had at the last poll
}

// fingerprintBytes is how much of a file's start identifies it (every record is longer).
const fingerprintBytes = 128

func (fl *follower) poll(emit func([]byte)) error {
	if fl.files == nil {
		fl.files, fl.names = map[string]int64{}, map[string]string{}
	}
	var names []string
	for i := 100; i >= 1; i-- { // oldest first
		if n := fmt.Sprintf("%s.%d", fl.path, i); fileExists(n) {
			names = append(names, n)
		}
	}
	names = append(names, fl.path)
	for _, name := range names {
		if err := fl.readFile(name, emit); err != nil {
			return err
		}
	}
	return nil
}

func fileExists(name string) bool { _, err := os.Stat(name); return err == nil }

func (fl *follower) readFile(name string, emit func([]byte)) error {
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil // rotated away between the listing and now: found under its next name
	}
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, fingerprintBytes)
	if n, _ := io.ReadFull(f, head); n < fingerprintBytes {
		return nil // too short to know yet; whole records are longer
	}
	fp := string(head)
	if old, ok := fl.names[fp]; ok && old != name {
		fl.rotations++
	}
	fl.names[fp] = name
	off := fl.files[fp]
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // a line without its newline yet: read again next time
		}
		if err != nil {
			return err
		}
		off += int64(len(line))
		emit(line)
	}
	fl.files[fp] = off
	return nil
}

// The rotation contract, as a shipper relies on it: rename rotation, every line written whole,
// and request ids unique. A follower that knows files by fingerprint reads every record once
// across 100 rotations, with nothing lost, torn or doubled.
func TestAShipperFollowingRenamesReadsEveryRecordOnceAcross100Rotations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	const records = 3000
	// A hundred files kept, more than the test writes: a shipper must keep up within the
	// retention (max_files), and this test is about renames, not about a shipper left behind.
	l := Open(Options{Path: path, MaxFileBytes: 6 << 10, MaxFiles: 100})
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		for i := range records {
			r := Record{TS: time.Now(), RID: fmt.Sprintf("%032x", i), Session: "local_a", Agent: "cowork", Transport: TransportSpool,
				Mode: "observe", Tool: "Bash", Input: json.RawMessage(`{"command":"echo ` + fmt.Sprint(i) + `"}`), Decision: "allow"}
			if err := l.Write(r); err != nil {
				done <- err
				return
			}
			if i%50 == 0 {
				time.Sleep(time.Millisecond) // let the follower fall behind and catch up
			}
		}
		done <- nil
	}()
	fl := &follower{path: path}
	// Order across files is not part of the contract (a shipper may read a new file before the
	// end of the one just renamed); each record once, whole, is.
	seen := map[string]bool{}
	emit := func(line []byte) {
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("a torn or foreign line: %q", line)
		}
		if seen[r.RID] {
			t.Fatalf("record %s read twice", r.RID)
		}
		seen[r.RID] = true
		if err := checkRecord(line); err != nil {
			t.Fatal(err)
		}
	}
	writing := true
	for deadline := time.Now().Add(30 * time.Second); len(seen) < records; {
		if err := fl.poll(emit); err != nil {
			t.Fatal(err)
		}
		if writing {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				writing = false
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("read %d of %d records", len(seen), records)
		}
		time.Sleep(200 * time.Microsecond)
	}
	if fl.rotations < 100 {
		t.Fatalf("the follower went through %d rotations, want at least 100", fl.rotations)
	}
}
