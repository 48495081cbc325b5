package session

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A folder noted quiet stays so only while nothing is made, removed or renamed in it; an entry
// made and removed again still leaves it changed.
func TestAQuietFolderIsUnchangedOnlyUntilAnEntryComesOrGoes(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "f"), 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var q Quiet
	st := s.StampOf("f")
	if st == (Stamp{}) {
		t.Fatal("no stamp for a folder that is there")
	}
	q.Note("f", st, true, time.Now())
	if q.Unchanged("f", s.StampOf("f")) {
		t.Fatal("a folder changed just now was noted quiet: an entry made in the same tick would be missed")
	}
	q.Note("f", st, true, time.Now().Add(QuietAfter+time.Second))
	if !q.Unchanged("f", s.StampOf("f")) {
		t.Fatal("a folder noted quiet and untouched is not unchanged")
	}
	if q.Unchanged("g", s.StampOf("g")) {
		t.Error("a folder that is not there is unchanged")
	}
	for _, change := range []func(p string) error{
		func(p string) error { return os.WriteFile(p, nil, 0o600) },
		func(p string) error { return os.Remove(p) },
	} {
		if err := change(filepath.Join(dir, "f", "x")); err != nil {
			t.Fatal(err)
		}
		if q.Unchanged("f", s.StampOf("f")) {
			t.Error("a folder an entry came to or left is still unchanged")
		}
	}
	q.Note("f", s.StampOf("f"), false, time.Now().Add(time.Hour))
	if q.Unchanged("f", s.StampOf("f")) {
		t.Error("a folder noted as not quiet is unchanged")
	}
	var none *Quiet
	if none.Unchanged("f", st) {
		t.Error("a nil Quiet spares a listing")
	}
	none.Note("f", st, true, time.Now()) // harmless
}
