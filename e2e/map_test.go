package e2e

import (
	"os"

	"github.com/coworkbridge/coworkbridge/telemetry"
	"path/filepath"
	"strings"
	"testing"
)

// The map by the file's identity, with the real CLI in both loops: a secret in the keys folder of
// the daemon's home, reached through a hard link in the session, a link to the folder, a pattern
// in a folder's name and /proc/self, is refused before it reaches the agent. (The issue's
// attacks, and their neighbours: Read and cat of each, a pattern in a middle component.)
func TestAttackTheKeysReachedByAnotherNameAreRefusedInBothLoops(t *testing.T) {
	const secret = "notes-Zq81-secret-of-the-keys-folder"
	for _, loop := range []string{"host", "vm"} {
		t.Run(loop, func(t *testing.T) {
			if loop == "vm" {
				if !unshareWorks() {
					t.Skip("unshare -m is not available (needs root on Linux); the VM loop is skipped")
				}
				if _, err := os.Stat("/sessions"); err != nil {
					t.Cleanup(func() { os.Remove("/sessions") })
				}
			}
			claudeBinary(t)
			// A home the map knows by its shape (/home/<user>, as /Users/<user> on a Mac).
			home, err := os.MkdirTemp("/home", "cbmap")
			if err != nil {
				t.Skipf("cannot make a home under /home: %v", err)
			}
			t.Cleanup(func() { os.RemoveAll(home) })
			keys := filepath.Join(home, ".ssh")
			os.MkdirAll(keys, 0o700)
			if err := os.WriteFile(filepath.Join(keys, "notes"), []byte(secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			d := startDaemon(t, buildCoworkbridge(t), `{"version":1,"cowork_enabled":true,"mode":"enforce"}`, "HOME="+home) // the user whose keys they are
			dir := newCoworkSession(t, d.root, "map"+loop)
			d.waitHooked(t, dir, "enforce")
			out := filepath.Join(dir, "outputs")
			if err := os.Link(filepath.Join(keys, "notes"), filepath.Join(out, "hard.txt")); err != nil {
				t.Skipf("no hard link across the test's folders: %v", err)
			}
			os.Symlink(keys, filepath.Join(out, "k"))
			seen := out // where the agent sees the session's outputs
			var vm *vmView
			if loop == "vm" {
				vm = &vmView{Guest: "/sessions/quirky-map" + loop + "/mnt", Hide: d.base}
				seen = vm.Guest + "/outputs"
			}
			cat := func(p string) toolUse {
				return toolUse{Name: "Bash", Input: map[string]any{"command": "cat " + p, "description": "x"}}
			}
			attacks := []struct {
				name string
				call toolUse
			}{
				{"Read of a hard link in the session", toolUse{Name: "Read", Input: map[string]any{"file_path": seen + "/hard.txt"}}},
				{"cat of a hard link in the session", cat("hard.txt")},
			}
			if loop == "host" { // the Mac's own folders: the VM sees none of them
				attacks = append(attacks, []struct {
					name string
					call toolUse
				}{
					{"cat through a link to the keys folder", cat("k/notes")},
					{"Read through a link to the keys folder", toolUse{Name: "Read", Input: map[string]any{"file_path": seen + "/k/notes"}}},
					{"a pattern in the folder's name", cat(home + "/.ss?/notes")},
					{"a bracket pattern in the folder's name", cat(home + "/.[s]sh/notes")},
					{"/proc/self/cwd and a link", cat("/proc/self/cwd/k/notes")},
					{"/proc/self/root", cat("/proc/self/root" + keys + "/notes")},
					{"/proc/$$/cwd and a link", cat("/proc/$$/cwd/k/notes")},
					{"python climbing from the working folder", toolUse{Name: "Bash", Input: map[string]any{"command": `python3 -c "print(open('` + climb(t, out, keys) + `/notes').read())"`, "description": "x"}}},
				}...)
			}
			var turns [][]toolUse
			for _, a := range attacks {
				turns = append(turns, []toolUse{a.call})
			}
			run := runCLIAs(t, newFakeAPI(t, turns...), dir, vm, nil)
			res := streamToolResults(run)
			if len(res) != len(attacks) {
				t.Fatalf("tool results %+v", res)
			}
			if full, err := telemetry.ReadFile(d.logPath); err == nil {
				for _, r := range full {
					t.Logf("record: %s %s %s %s %s", r.Transport, r.Tool, r.Decision, r.Rule, r.Input)
				}
			}
			for i, a := range attacks {
				if strings.Contains(res[i].Content, secret) {
					t.Errorf("%s: the secret reached the agent", a.name)
				} else if !res[i].IsError || !strings.Contains(res[i].Content, "coworkbridge") {
					t.Errorf("%s: not refused by coworkbridge: %+v", a.name, res[i])
				}
			}
		})
	}
}

// climb is the relative path from the folder from to the folder to, climbing as far as it must.
func climb(t *testing.T, from, to string) string {
	t.Helper()
	rel, err := filepath.Rel(from, to)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}
