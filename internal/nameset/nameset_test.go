package nameset

import (
	"sync"
	"testing"
)

func TestASetHasItsNamesAndNoOther(t *testing.T) {
	s := Of("curl", "wget", "curl")
	for name, want := range map[string]bool{"curl": true, "wget": true, "": false, "cur": false, "Curl": false} {
		if got := s.Has(name); got != want {
			t.Errorf("Has(%q) = %v, want %v", name, got, want)
		}
	}
	if s.Len() != 2 || len(s.Names()) != 3 {
		t.Errorf("Len %d, Names %v", s.Len(), s.Names())
	}
}

func TestASetIsBuiltOnceAcrossGoroutines(t *testing.T) {
	s := Of("a", "b")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if !s.Has("a") || s.Has("c") {
				t.Error("a goroutine saw a wrong set")
			}
		})
	}
	wg.Wait()
}

func BenchmarkHas(b *testing.B) {
	s := Of("curl", "wget", "aria2c", "http", "https", "xh", "fetch", "lynx", "w3m", "links")
	for b.Loop() {
		s.Has("links")
	}
}

// A set answers alike before and after it is hashed.
func TestASetAnswersAlikeWhetherScannedOrHashed(t *testing.T) {
	s := Of("curl", "wget", "aria2c")
	for i := range 3 * scans {
		for name, want := range map[string]bool{"curl": true, "aria2c": true, "": false, "Wget": false} {
			if got := s.Has(name); got != want {
				t.Fatalf("lookup %d: Has(%q) = %v, want %v", i, name, got, want)
			}
		}
	}
	if s.m == nil {
		t.Error("a set looked in often was never hashed")
	}
}
