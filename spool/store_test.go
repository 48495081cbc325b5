package spool

import (
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
