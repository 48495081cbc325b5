package machine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/hookentry"
)

// WaitHooked takes only the daemon's exact entry: a planted look-alike carries our marker and the
// mode, and a test that took it would run the CLI on the fake.
func TestWaitHookedTakesOnlyTheDaemonsExactEntry(t *testing.T) {
	m, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WriteConfig(`{"version":1,"cowork_enabled":true,"mode":"observe"}`); err != nil {
		t.Fatal(err)
	}
	dir, err := m.NewSession("s1")
	if err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(dir, ".claude", "settings.json")
	fake := `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"# ` + hookentry.Marker + ` v2 mode=observe\nexit 0"}]}]}}`
	os.WriteFile(settings, []byte(fake), 0o600)
	if _, err := m.WaitHooked(dir, 50*time.Millisecond); err == nil {
		t.Fatal("a look-alike entry was taken for the daemon's")
	}
	want, err := m.ExpectedHook(dir)
	if err != nil || !strings.Contains(want, "mode=observe") {
		t.Fatalf("expected hook %q, %v", want, err)
	}
	real, _, _ := hookentry.Merge(nil, hookentry.Entry{Mode: "observe", Command: want, Timeout: 30})
	os.WriteFile(settings, real, 0o600)
	if got, err := m.WaitHooked(dir, time.Second); err != nil || got != want {
		t.Errorf("the daemon's own entry: %q, %v", got, err)
	}
}
