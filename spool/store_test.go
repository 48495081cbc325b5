package spool

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStoreSurvivesARestartAndOnlyCommittedPositionsCount(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state", "offsets.json")
	s, err := OpenStore(p)
	if err != nil {
		t.Fatal(err)
	}
	a := Position{ID: Identity{Dev: 1, Ino: 2}, Offset: 40}
	s.Set("local_a", a)
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	s.Set("local_a", Position{ID: a.ID, Offset: 90}) // not committed: the work may not be done
	again, err := OpenStore(p)
	if err != nil || again.Get("local_a") != a || again.Get("local_b") != (Position{}) {
		t.Fatalf("reloaded %+v %v", again.Get("local_a"), err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	again.Forget("local_a")
	again.Commit()
	if third, _ := OpenStore(p); third.Get("local_a") != (Position{}) {
		t.Error("a forgotten key came back")
	}
}

func TestDamagedStoreStartsOverAndSaysSo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "offsets.json")
	os.WriteFile(p, []byte("{not json"), 0o600)
	s, err := OpenStore(p)
	if err == nil || !strings.Contains(err.Error(), "starting every spool from its beginning") {
		t.Fatalf("err %v", err)
	}
	if s == nil || s.Get("x") != (Position{}) {
		t.Fatal("a damaged store must still be usable, empty")
	}
}

func TestNotesAreCommittedWithThePositionsAndTheFirstFormStillReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offsets.json")
	if err := os.WriteFile(path, []byte(`{"a":{"id":{"dev":1,"ino":2},"offset":7}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(path)
	if err != nil || s.Get("a").Offset != 7 {
		t.Fatalf("first form: %v, %+v", err, s.Get("a"))
	}
	s.SetNote("a#r", json.RawMessage(`{"x":1}`))
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	again, err := OpenStore(path)
	if err != nil || again.Get("a").Offset != 7 || string(again.Note("a#r")) != `{"x":1}` {
		t.Fatalf("reopened: %v, %+v, note %s", err, again.Get("a"), again.Note("a#r"))
	}
	if keys := again.Keys("a#"); len(keys) != 1 || keys[0] != "a#r" {
		t.Errorf("keys %v: a note is listed with the positions it sits beside", keys)
	}
	again.Forget("a#r")
	if again.Note("a#r") != nil {
		t.Error("a forgotten note remains")
	}
}
