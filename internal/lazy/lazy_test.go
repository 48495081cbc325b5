package lazy

import (
	"sync"
	"sync/atomic"
	"testing"
)

var made atomic.Int32

var table = Value[map[string]bool]{Make: func() map[string]bool {
	made.Add(1)
	return map[string]bool{"a": true}
}}

func TestNothingIsMadeBeforeTheFirstGetAndMakeRunsOnceForEveryCaller(t *testing.T) {
	if n := made.Load(); n != 0 {
		t.Fatalf("Make ran %d times before any Get", n)
	}
	var wg sync.WaitGroup
	got := make([]map[string]bool, 8)
	for i := range got {
		wg.Go(func() { got[i] = table.Get() })
	}
	wg.Wait()
	if n := made.Load(); n != 1 {
		t.Errorf("Make ran %d times for %d callers, want once", n, len(got))
	}
	for i, m := range got {
		if !m["a"] {
			t.Errorf("caller %d got %v", i, m)
		}
	}
	got[0]["b"] = true
	if !table.Get()["b"] {
		t.Error("a later Get made the value again instead of returning the one made")
	}
}
