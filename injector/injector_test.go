package injector

import (
	"context"
	"errors"
	"github.com/coworkbridge/coworkbridge/internal/cadence"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// recorder is a hand-written Recorder that keeps what it was told.
type recorder struct {
	mu         sync.Mutex
	seen       map[string]bool
	hooked     map[string]bool
	unverified map[string]bool
	repaired   map[string][]string
	tampered   map[string][]string
	gone       map[string]bool
	changed    map[string]int
	scans      []health.ScanReport
}

func newRecorder() *recorder {
	return &recorder{seen: map[string]bool{}, hooked: map[string]bool{}, unverified: map[string]bool{},
		repaired: map[string][]string{}, tampered: map[string][]string{}, gone: map[string]bool{}, changed: map[string]int{}}
}

func (r *recorder) SessionSeen(id, _ string) { r.mu.Lock(); r.seen[id] = true; r.mu.Unlock() }
func (r *recorder) SessionHooked(id string, unverified bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hooked[id] = true
	if unverified {
		r.unverified[id] = true
	}
}
func (r *recorder) SessionUnhooked(id string, _ error) {
	r.mu.Lock()
	r.hooked[id] = false
	r.mu.Unlock()
}
func (r *recorder) SettingsRepaired(id string, what []string) {
	r.mu.Lock()
	r.repaired[id] = append(r.repaired[id], what...)
	r.mu.Unlock()
}
func (r *recorder) SessionTampered(id string, what []string) {
	r.mu.Lock()
	r.tampered[id] = append(r.tampered[id], what...)
	r.mu.Unlock()
}
func (r *recorder) SessionGone(id string)    { r.mu.Lock(); r.gone[id] = true; r.mu.Unlock() }
func (r *recorder) SessionChanged(id string) { r.mu.Lock(); r.changed[id]++; r.mu.Unlock() }
func (r *recorder) Scanned(s health.ScanReport) {
	r.mu.Lock()
	r.scans = append(r.scans, s)
	r.mu.Unlock()
}

func (r *recorder) check(f func(r *recorder) bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return f(r)
}

func testConfig(root string, mode managedconfig.Mode) managedconfig.Config {
	return managedconfig.Config{
		Mode: mode, SessionsRoots: []string{root},
		HookTimeout: 30 * time.Second, DecisionTimeout: 10 * time.Second, MaxLineBytes: 4 << 20,
		// An hour: anything these tests see within seconds came through the watcher.
		RescanInterval: time.Hour,
	}
}

func startInjector(t *testing.T, cfg managedconfig.Config, opts Options) (*Injector, *recorder) {
	in, rec, _ := startStoppable(t, cfg, opts)
	return in, rec
}

// startStoppable also returns a function that stops the injector and waits for it.
func startStoppable(t *testing.T, cfg managedconfig.Config, opts Options) (*Injector, *recorder, func()) {
	t.Helper()
	rec := newRecorder()
	opts.Recorder = rec
	in, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- in.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run returned %v", err)
			}
		})
	}
	t.Cleanup(stop)
	// The first scan has run once a report arrives.
	cbtest.WaitFor(t, "first scan", func() bool { return rec.check(func(r *recorder) bool { return len(r.scans) > 0 }) })
	return in, rec, stop
}

func makeSession(t *testing.T, root, id string, settings string) string {
	t.Helper()
	dir := filepath.Join(root, "acct", "org", id)
	if err := os.MkdirAll(filepath.Join(dir, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if settings != "" {
		if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func settingsOf(dir string) string {
	data, _ := os.ReadFile(filepath.Join(dir, ".claude", "settings.json"))
	return string(data)
}

func hasMode(dir string, mode managedconfig.Mode) bool {
	s := settingsOf(dir)
	return strings.Contains(s, hookentry.Marker) && strings.Contains(s, "mode="+string(mode)) && strings.Count(s, hookentry.Marker) == 1
}

func TestInjectorHooksNewSessionsRepairsAndSwitchesMode(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	existing := makeSession(t, root, "local_old", "{}")
	in, rec := startInjector(t, testConfig(root, managedconfig.Observe), Options{})
	if !hasMode(existing, managedconfig.Observe) {
		t.Fatalf("a live session was not hooked at start: %s", settingsOf(existing))
	}

	// A new session: Cowork makes the folders, then settings.json as {}.
	fresh := makeSession(t, root, "local_new", "")
	cbtest.WaitFor(t, "hook in the new session", func() bool { return hasMode(fresh, managedconfig.Observe) })
	os.WriteFile(filepath.Join(fresh, ".claude", "settings.json"), []byte("{}"), 0o644)
	cbtest.WaitFor(t, "hook restored after Cowork rewrote settings", func() bool { return hasMode(fresh, managedconfig.Observe) })

	// The agent removes our entry and switches hooks off.
	os.WriteFile(filepath.Join(existing, ".claude", "settings.json"), []byte(`{"disableAllHooks":true}`), 0o644)
	cbtest.WaitFor(t, "repair", func() bool {
		return hasMode(existing, managedconfig.Observe) && !strings.Contains(settingsOf(existing), "disableAllHooks")
	})
	cbtest.WaitFor(t, "repair reported", func() bool {
		return rec.check(func(r *recorder) bool { return len(r.repaired["local_old"]) > 0 })
	})

	in.SetConfig(testConfig(root, managedconfig.Enforce))
	cbtest.WaitFor(t, "every session in enforce", func() bool {
		return hasMode(existing, managedconfig.Enforce) && hasMode(fresh, managedconfig.Enforce)
	})

	if err := os.RemoveAll(fresh); err != nil {
		t.Fatalf("removing a session raced with the injector: %v", err)
	}
	cbtest.WaitFor(t, "session gone", func() bool { return rec.check(func(r *recorder) bool { return r.gone["local_new"] }) })
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("the removed session came back: %v", err)
	}
}

func TestInjectorWatchesForARootThatDoesNotExistYet(t *testing.T) {
	root := filepath.Join(t.TempDir(), "Claude", "local-agent-mode-sessions")
	_, rec := startInjector(t, testConfig(root, managedconfig.Observe), Options{})
	if !rec.check(func(r *recorder) bool { return len(r.scans[0].MissingRoots) == 1 }) {
		t.Fatal("missing root not reported")
	}
	dir := makeSession(t, root, "local_1", "{}")
	cbtest.WaitFor(t, "hook under the late root", func() bool { return hasMode(dir, managedconfig.Observe) })
}

// A Mac where the Claude app ran before Cowork did: the root's parent exists and is watched, and
// the root appears with the first session. That session is hooked from the watch, not at the
// next rescan (an hour away here), so its first call is judged.
func TestASessionsRootCreatedUnderAnExistingParentIsWatchedAtOnce(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "Claude")
	if err := os.MkdirAll(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(parent, "local-agent-mode-sessions")
	cfg := testConfig(root, managedconfig.Observe)
	cfg.RescanInterval = time.Hour
	in, rec := startInjector(t, cfg, Options{})
	if !rec.check(func(r *recorder) bool { return len(r.scans) > 0 && len(r.scans[0].MissingRoots) == 1 }) {
		t.Fatal("missing root not reported")
	}
	before := in.Watches()
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	// The root alone first, as Cowork makes it, and seen by the injector before the session.
	cbtest.WaitFor(t, "the new root watched", func() bool { return in.Watches() > before })
	dir := makeSession(t, root, "local_1", "{}")
	cbtest.WaitFor(t, "hook under the late root", func() bool { return hasMode(dir, managedconfig.Observe) })
}

func TestInjectorLeavesOldSessionsAloneAndMarksRunningOnesUnverified(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	old := makeSession(t, root, "local_old", "{}")
	ancient := time.Now().Add(-48 * time.Hour)
	for _, p := range []string{old, filepath.Join(old, ".claude")} {
		os.Chtimes(p, ancient, ancient)
	}
	running := makeSession(t, root, "local_running", "{}")
	os.MkdirAll(filepath.Join(running, ".claude", "projects", "-sessions-x"), 0o755)
	_, rec := startInjector(t, testConfig(root, managedconfig.Observe), Options{})
	if settingsOf(old) != "{}" {
		t.Error("a session idle for 48 h was rewritten")
	}
	if !hasMode(running, managedconfig.Observe) || !rec.check(func(r *recorder) bool { return r.unverified["local_running"] }) {
		t.Error("a running session hooked for the first time must be reported unverified")
	}
}

func TestInjectorRespectsTheWatchLimit(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	for _, id := range []string{"local_a", "local_b", "local_c"} {
		makeSession(t, root, id, "{}")
	}
	in, rec := startInjector(t, testConfig(root, managedconfig.Observe), Options{MaxWatches: 4})
	_ = in
	r := rec.check(func(r *recorder) bool { return r.scans[0].Watches <= 4 && r.scans[0].WatchLimited > 0 })
	if !r {
		t.Errorf("scan report %+v: want at most 4 watches and limited sessions counted", rec.scans[0])
	}
	if !rec.check(func(r *recorder) bool { return r.hooked["local_a"] && r.hooked["local_b"] && r.hooked["local_c"] }) {
		t.Error("sessions past the watch limit must still be hooked by the scan")
	}
}

func TestUnhookAllRemovesOnlyOurEntries(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	a := makeSession(t, root, "local_a", `{"model":"opus"}`)
	b := makeSession(t, root, "local_b", "")
	cfg := testConfig(root, managedconfig.Enforce)
	_, _, stop := startStoppable(t, cfg, Options{})
	// b has no settings.json: it is created after one removal hold (it could be a session being
	// deleted), so b is hooked a moment later than a.
	cbtest.WaitFor(t, "both hooked", func() bool { return hasMode(a, managedconfig.Enforce) && hasMode(b, managedconfig.Enforce) })
	stop() // the daemon stops its injector before unhooking, or it would repair at once
	if n := UnhookAll([]string{root}, nil); n != 2 {
		t.Errorf("changed %d sessions, want 2", n)
	}
	if strings.Contains(settingsOf(a), hookentry.Marker) || !strings.Contains(settingsOf(a), `"opus"`) {
		t.Errorf("a: %s", settingsOf(a))
	}
}

// A rescan takes one ownership check for all the sessions it finds (so that the folders they
// share are looked at once), a new one at each rescan (so that nothing it remembers ages past
// its pass), and hooks no session the check refuses.
func TestEachRescanTakesOneOwnershipCheckAndHooksNoSessionItRefuses(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	var dirs []string
	for _, name := range []string{"local_mine", "local_alias", "local_mine2"} {
		dir := filepath.Join(root, "acct", "org", name)
		if err := os.MkdirAll(filepath.Join(dir, ".claude"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	checks, asked := 0, 0
	owned := func() func(string) error {
		checks++
		return func(dir string) error {
			asked++
			if filepath.Base(dir) == "local_alias" {
				return errors.New("a link above it leads to another user's folders")
			}
			return nil
		}
	}
	in, err := New(testConfig(root, managedconfig.Observe), Options{Owned: owned})
	if err != nil {
		t.Fatal(err)
	}
	in.w = fswatch.NewFake()
	in.rescan(true) // the first adds watches, and so looks twice
	checks, asked = 0, 0
	in.rescan(true)
	if checks != 1 || asked != 1+len(dirs) {
		t.Errorf("a rescan took %d checks and asked %d times; want one check asked of the root and each of the %d sessions", checks, asked, len(dirs))
	}
	in.rescan(true)
	if checks != 2 {
		t.Errorf("two rescans took %d checks; want a new one each", checks)
	}
	if !hasMode(dirs[0], managedconfig.Observe) || !hasMode(dirs[2], managedconfig.Observe) {
		t.Error("the user's own sessions were not hooked")
	}
	if strings.Contains(settingsOf(dirs[1]), hookentry.Marker) {
		t.Error("a session the ownership check refused was hooked")
	}
}

// A calm session a full rescan passes over is not asked about in its own right: its last full
// look asked, a link below its root is seen by the listing (which follows none), and only root
// can give its folder to another user. The pass asks about the path down to its root instead,
// once; the look that ends the session's rest asks about the session. Once a link is planted
// above the root (the check refuses the root), every session below it is asked, and refused,
// at the next rescan, resting or not.
func TestACalmSessionsOwnershipIsAskedAtItsFullLooksAndItsRootsAtEveryRescan(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	dir := makeSession(t, root, "local_calm", "{}")
	if err := os.MkdirAll(filepath.Join(dir, ".claude", "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	var asked []string
	aliased := false
	owned := func() func(string) error {
		return func(d string) error {
			asked = append(asked, d)
			if aliased {
				return errors.New("a link above it leads to another user's folders")
			}
			return nil
		}
	}
	rec := newRecorder()
	in, err := New(testConfig(root, managedconfig.Observe), Options{Owned: owned, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	in.w = fswatch.NewFake()
	in.rescan(true) // hooks it
	in.rescan(true) // finds it calm
	for i := 1; i < cadence.FirstRest; i++ {
		asked = nil
		in.rescan(true)
		if !slices.Equal(asked, []string{root}) {
			t.Errorf("a rescan passing over a calm session asked about %q; want its root alone", asked)
		}
	}
	asked = nil
	in.rescan(true) // the end of its rest
	if !slices.Equal(asked, []string{root, dir}) {
		t.Errorf("the full look ending a calm session's rest asked about %q; want its root and the session", asked)
	}
	in.rescan(true) // calm again, resting
	if !in.live[dir].cadence.Resting() {
		t.Fatal("setup: the session is not resting")
	}
	aliased, asked = true, nil
	in.rescan(true)
	if !slices.Contains(asked, dir) {
		t.Errorf("with its root refused, the rescan asked about %q; want the resting session too", asked)
	}
	if in.live[dir] != nil {
		t.Error("a resting session below a root the check refused is still tracked")
	}
	if got := rec.scans[len(rec.scans)-1].Unrecognised; !slices.ContainsFunc(got, func(u string) bool { return strings.HasPrefix(u, dir) }) {
		t.Errorf("the refused session is not reported: unrecognised %q", got)
	}
}
