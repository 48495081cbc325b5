package collector

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// addCounter is a fake watcher that counts the watches added on each folder.
type addCounter struct {
	*fswatch.Fake
	mu   sync.Mutex
	adds map[string]int
}

func (a *addCounter) Add(dir string) error {
	a.mu.Lock()
	a.adds[dir]++
	a.mu.Unlock()
	return a.Fake.Add(dir)
}

func (a *addCounter) count(dir string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.adds[dir]
}

// A rescan of an idle session does not walk and watch its folders again while they are the ones
// watched, unchanged; a folder replaced since is watched again at the next rescan.
func TestARescanWatchesAgainOnlyAFolderThatChanged(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	w := &addCounter{Fake: fswatch.NewFake(), adds: map[string]int{}}
	f.opts.Watcher = func() (fswatch.Watcher, error) { return w, nil }
	f.start()
	f.settle()
	f.settle()
	decisions := f.bridge("decisions")
	claude := filepath.Join(f.dir, ".claude")
	before, beforeClaude := w.count(decisions), w.count(claude)
	if before == 0 || beforeClaude == 0 {
		t.Fatalf("the session's folders were never watched (%d, %d adds)", before, beforeClaude)
	}
	f.settle()
	f.settle()
	if n := w.count(decisions); n != before {
		t.Errorf("decisions/ unchanged was watched again at a rescan (%d adds, then %d)", before, n)
	}
	if n := w.count(claude); n != beforeClaude {
		t.Errorf(".claude unchanged was watched again at a rescan (%d adds, then %d)", beforeClaude, n)
	}
	if err := os.Rename(decisions, decisions+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(decisions, 0o700); err != nil {
		t.Fatal(err)
	}
	f.settle()
	if n := w.count(decisions); n <= before {
		t.Errorf("a replaced decisions/ was not watched again (%d adds)", n)
	}
}
