package managedconfig

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fixture is a machine with a managed.json location and a state folder inside a temp dir.
type fixture struct {
	config string
	loader *Loader
	paths  Paths
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "mdm")
	if err := os.Mkdir(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(cfgDir, "managed.json")
	vars := map[string]string{EnvManagedConfig: config, EnvStateDir: filepath.Join(dir, "state")}
	env := Env{GOOS: "linux", Home: dir, Getenv: func(k string) string { return vars[k] }}
	paths, err := env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	return fixture{config: config, loader: NewDaemonLoader(env, paths), paths: paths}
}

func (f fixture) write(t *testing.T, content string) {
	t.Helper()
	if err := os.WriteFile(f.config, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	enforceOn = `{"version":1,"cowork_enabled":true,"mode":"enforce"}`
	observeOn = `{"version":1,"cowork_enabled":true,"mode":"observe"}`
)

func TestLoadWithNoFileIsOffWithoutError(t *testing.T) {
	f := newFixture(t)
	s := f.loader.Load()
	if s.Origin != OriginNone || s.Enabled() || s.Problem != nil || s.Path != "" {
		t.Errorf("got %+v, want off with no problem", s)
	}
	if s.Config.RescanInterval != 30*time.Second {
		t.Error("an off snapshot must still carry the defaults")
	}
}

func TestLoadValidFileIsInForceAndSavedAsLastGood(t *testing.T) {
	f := newFixture(t)
	f.write(t, enforceOn)
	s := f.loader.Load()
	if s.Origin != OriginFile || !s.Enabled() || s.Config.Mode != Enforce || s.Path != f.config {
		t.Fatalf("got %+v", s)
	}
	if len(s.Hash) != 64 || s.SaveErr != nil {
		t.Fatalf("hash %q save error %v", s.Hash, s.SaveErr)
	}
	saved, err := os.ReadFile(f.paths.LastGoodFile())
	if err != nil || string(saved) != enforceOn {
		t.Fatalf("last good copy %q, %v", saved, err)
	}
	fi, _ := os.Stat(f.paths.LastGoodFile())
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("last good copy mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestLoadInvalidFileKeepsLastGoodEnforce(t *testing.T) {
	f := newFixture(t)
	f.write(t, enforceOn)
	good := f.loader.Load()
	f.write(t, `{"version":1,"cowork_enabled":true,"mode":"enforce",`) // an MDM push cut short
	s := f.loader.Load()
	if s.Origin != OriginLastGood || s.Config.Mode != Enforce || !s.Enabled() {
		t.Fatalf("an invalid file must keep the last good enforce config, got %+v", s)
	}
	if s.Problem == nil || !strings.Contains(s.Problem.Error(), "ends before the JSON object is complete") {
		t.Errorf("problem %v should say why the file is not in force", s.Problem)
	}
	if s.Hash != good.Hash {
		t.Errorf("hash %s should be the last good one %s", s.Hash, good.Hash)
	}
}

func TestLoadInvalidFileNeverRelaxesToObserve(t *testing.T) {
	f := newFixture(t)
	f.write(t, enforceOn)
	f.loader.Load()
	// A valid-looking relaxation with a typo elsewhere must not take effect in part.
	f.write(t, `{"version":1,"cowork_enabled":true,"mode":"observe","hook_timeout":"fast"}`)
	if s := f.loader.Load(); s.Config.Mode != Enforce {
		t.Fatalf("mode %s: an invalid file relaxed enforcement", s.Config.Mode)
	}
}

func TestLoadInvalidFileWithNoLastGoodIsOffAndSaysSo(t *testing.T) {
	f := newFixture(t)
	f.write(t, `{"version":1,"mode":"enforced"}`)
	s := f.loader.Load()
	if s.Origin != OriginInvalid || s.Enabled() || s.Problem == nil {
		t.Fatalf("got %+v, want off with a problem", s)
	}
	if _, err := os.Stat(f.paths.LastGoodFile()); !os.IsNotExist(err) {
		t.Error("an invalid file must never become the last good copy")
	}
}

func TestLoadCorruptLastGoodIsReportedToo(t *testing.T) {
	f := newFixture(t)
	if err := os.MkdirAll(f.paths.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.paths.LastGoodFile(), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.write(t, `{}`)
	s := f.loader.Load()
	if s.Origin != OriginInvalid || !strings.Contains(s.Problem.Error(), "last good copy is unusable") {
		t.Fatalf("got %+v", s)
	}
}

func TestLoadDirectoryInPlaceOfFileIsInvalid(t *testing.T) {
	f := newFixture(t)
	if err := os.Mkdir(f.config, 0o755); err != nil {
		t.Fatal(err)
	}
	s := f.loader.Load()
	if s.Origin != OriginInvalid || !strings.Contains(s.Problem.Error(), "not a regular file") {
		t.Fatalf("got %+v", s)
	}
}

func TestLoadOversizedFileIsInvalid(t *testing.T) {
	f := newFixture(t)
	f.write(t, `{"version":1,"x":"`+strings.Repeat("a", maxConfigFileBytes)+`"}`)
	s := f.loader.Load()
	if s.Origin != OriginInvalid || !strings.Contains(s.Problem.Error(), "the limit is") {
		t.Fatalf("got %+v", s)
	}
}

// A link to nothing at managed.json is no admin's decision to switch off: enforce stays on the
// last good copy, and the problem is said.
func TestLoadADanglingLinkKeepsTheLastGoodConfiguration(t *testing.T) {
	f := newFixture(t)
	f.write(t, enforceOn)
	f.loader.Load()
	os.Remove(f.config)
	if err := os.Symlink(filepath.Join(filepath.Dir(f.config), "gone.json"), f.config); err != nil {
		t.Fatal(err)
	}
	s := f.loader.Load()
	if s.Origin != OriginLastGood || s.Config.Mode != Enforce || !s.Enabled() {
		t.Fatalf("a dangling link switched enforce off: %+v", s)
	}
	if s.Problem == nil || !strings.Contains(s.Problem.Error(), "does not exist") {
		t.Errorf("problem %v", s.Problem)
	}
}

// A FIFO at managed.json is refused at once, not waited on: the host hook reads the file at
// every tool call.
func TestLoadAFIFOIsInvalidWithoutWaiting(t *testing.T) {
	f := newFixture(t)
	if err := syscall.Mkfifo(f.config, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan Snapshot, 1)
	go func() { done <- f.loader.Load() }()
	select {
	case s := <-done:
		if s.Origin != OriginInvalid || !strings.Contains(s.Problem.Error(), "not a regular file") {
			t.Fatalf("got %+v", s)
		}
		if s.Intent != Enforce {
			t.Errorf("intent %q: a FIFO planted at the name must fail closed", s.Intent)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Load waited on the FIFO")
	}
}

func TestLoadRemovedFileSwitchesOff(t *testing.T) {
	f := newFixture(t)
	f.write(t, enforceOn)
	f.loader.Load()
	if err := os.Remove(f.config); err != nil {
		t.Fatal(err)
	}
	if s := f.loader.Load(); s.Origin != OriginNone || s.Enabled() {
		t.Fatalf("got %+v: removing managed.json is how an admin switches coworkbridge off", s)
	}
}

// Only the daemon keeps the last-good copy: a command that reads a candidate file (check,
// validate, the host hook) must not replace the copy an enforce deployment falls back on.
func TestAReadOnlyLoaderNeverWritesTheLastGoodCopy(t *testing.T) {
	f := newFixture(t)
	f.write(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	if s := f.loader.Load(); s.Origin != OriginFile {
		t.Fatalf("setup: %+v", s)
	}
	f.write(t, `{"version":1,"cowork_enabled":true,"mode":"observe"}`)
	ro := NewLoader(f.loader.env, f.paths)
	if s := ro.Load(); s.Origin != OriginFile || s.Config.Mode != Observe {
		t.Fatalf("the read-only loader: %+v", s)
	}
	f.write(t, `{"version":1,`)
	if s := ro.Load(); s.Origin != OriginLastGood || s.Config.Mode != Enforce {
		t.Errorf("after a read-only load of an observe file, the fallback is %s (%s), want the daemon's enforce copy", s.Config.Mode, s.Origin)
	}
}

func TestABrokenFilesIntentIsWhatItClearlyAsksFor(t *testing.T) {
	for data, want := range map[string]Mode{
		`{"version":1,"cowork_enabled":true,"mode":"enforce",}`:   Enforce,
		`{"version":1, "mode" : "enforce", "hook_timeout": "1x"}`: Enforce,
		`{"version":1,"cowork_enabled":false,"mode":"enforce"`:    Observe,
		`{"version":1,"cowork_enabled":true,"mode":"observe",}`:   Observe,
		`{"version":1,"mode":"enforcee"}`:                         Observe,
		``:                                                        Observe,
	} {
		if got := IntentOf([]byte(data)); got != want {
			t.Errorf("IntentOf(%s) = %s, want %s", data, got, want)
		}
	}
	f := newFixture(t)
	f.write(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","hook_timeout":"0s"}`)
	if s := f.loader.Load(); s.Origin != OriginInvalid || s.Intent != Enforce {
		t.Errorf("Load: origin %s intent %q", s.Origin, s.Intent)
	}
}
