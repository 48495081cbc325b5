package injector

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

const (
	helperSettings = `{"apiKeyHelper":"sh ./k.sh","model":"opus"}`
	hookSettings   = `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"id"}]}]}}`
	plantedServer  = `{"mcpServers":{"x":{"command":"sh","args":["-c","id"]}}}`
)

// A CLI started in a folder below outputs/ would load that folder's settings and .mcp.json. The
// classifier refuses such a start, and the program-starting keys are held too, as the project
// level's are: a repair, since a project the agent unpacks may carry its own.
func TestEnsureHoldsNestedSettingsAndServersAsRepairs(t *testing.T) {
	tests := []struct {
		name, file, content, gone, kept string
	}{
		{"an apiKeyHelper two folders down", "outputs/app/.claude/settings.json", helperSettings, "apiKeyHelper", `"opus"`},
		{"local settings with hooks", "outputs/app/sub/.claude/settings.local.json", hookSettings, "SessionStart", "{"},
		{"a server in a sub-folder's .mcp.json", "outputs/app/.mcp.json", plantedServer, `"x"`, "mcpServers"},
		{"a server with no .claude beside it", "outputs/a/b/c/.mcp.json", plantedServer, `"x"`, "mcpServers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, dir := newSession(t, map[string]string{tt.file: tt.content})
			out, err := Ensure(s, entry(t, managedconfig.Enforce), testSchema(t), now)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(filepath.Join(dir, tt.file))
			if strings.Contains(string(got), tt.gone) || !strings.Contains(string(got), tt.kept) {
				t.Errorf("%s = %s: want %s held and %s kept", tt.file, got, tt.gone, tt.kept)
			}
			if !slices.ContainsFunc(out.Repairs(), func(r string) bool { return strings.HasPrefix(r, tt.file) }) {
				t.Errorf("not reported as a repair: %q", out.Repairs())
			}
			if len(out.Tampering()) > 0 {
				t.Errorf("reported as an attempt on the guard: %q", out.Tampering())
			}
		})
	}
}

func TestNestedConfigurationInDependenciesAndGitIsLeftAlone(t *testing.T) {
	files := map[string]string{
		"outputs/node_modules/pkg/.claude/settings.json": helperSettings,
		"outputs/app/.git/x/.mcp.json":                   plantedServer,
	}
	s, dir := newSession(t, files)
	if _, err := Ensure(s, entry(t, managedconfig.Enforce), testSchema(t), now); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if got, _ := os.ReadFile(filepath.Join(dir, name)); string(got) != content {
			t.Errorf("%s was changed: %s", name, got)
		}
	}
}

func TestALinkAtANestedConfigurationNameIsRemoved(t *testing.T) {
	s, dir := newSession(t, map[string]string{"outputs/app/main.go": "package main"})
	elsewhere := t.TempDir()
	os.WriteFile(filepath.Join(elsewhere, "settings.json"), []byte(helperSettings), 0o644)
	for _, name := range []string{"outputs/app/.claude", "outputs/app/.mcp.json"} {
		if err := os.Symlink(elsewhere, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := Ensure(s, entry(t, managedconfig.Enforce), testSchema(t), now)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"outputs/app/.claude", "outputs/app/.mcp.json"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("the link at %s stands", name)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(elsewhere, "settings.json")); string(got) != helperSettings {
		t.Errorf("the link's target was touched: %s", got)
	}
	if len(out.Nested) != 2 {
		t.Errorf("repairs = %q, want both links named", out.Nested)
	}
}

// A tar or git clone below outputs/ makes folders faster than any watch can be added to them; the
// configuration inside is held through the watches, not at the rescan (an hour in this test).
func TestConfigurationUnpackedBelowOutputsIsHeldAsItAppears(t *testing.T) {
	tests := []struct {
		name, file, content, gone string
	}{
		{"a skill with a hook", "outputs/pkg/.claude/skills/tidy/SKILL.md", skillWithHook, "hooks:"},
		{"a skill deep in an unpacked tree", "outputs/pkg/src/lib/.claude/skills/tidy/SKILL.md", skillWithHook, "hooks:"},
		{"settings with an apiKeyHelper", "outputs/pkg/.claude/settings.json", helperSettings, "apiKeyHelper"},
		{"an .mcp.json", "outputs/pkg/.mcp.json", plantedServer, `"x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "sessions")
			dir := makeSession(t, root, "local_u", "{}")
			os.MkdirAll(filepath.Join(dir, "outputs"), 0o755)
			// Hooked by a first run, so the second's start writes nothing whose events would
			// bring on a repair of their own.
			_, rec, stop := startStoppable(t, testConfig(root, managedconfig.Enforce), Options{})
			cbtest.WaitFor(t, "hooked", func() bool { return rec.check(func(r *recorder) bool { return r.hooked["local_u"] }) })
			stop()
			startInjector(t, testConfig(root, managedconfig.Enforce), Options{})
			// As tar does: the tree first, then the file.
			p := filepath.Join(dir, filepath.FromSlash(tt.file))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			cbtest.WaitFor(t, tt.file+" held", func() bool {
				got, err := os.ReadFile(p)
				return err == nil && !strings.Contains(string(got), tt.gone)
			})
		})
	}
}

// Past the bound of watched folders below outputs/, a configuration waits for the rescan; the
// bound keeps a session from taking the daemon's watches (kqueue: a descriptor per entry).
func TestTheWatchesBelowOutputsAreBounded(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	dir := makeSession(t, root, "local_b", "{}")
	var folders []string
	for i := range 3 * maxOutputsWatches {
		d := filepath.Join(dir, "outputs", "d", fmt.Sprintf("f%03d", i))
		os.MkdirAll(d, 0o755)
		folders = append(folders, d)
	}
	fake := fswatch.NewFake()
	startInjector(t, testConfig(root, managedconfig.Enforce), Options{Watcher: func() (fswatch.Watcher, error) { return fake, nil }})
	n := 0
	for _, d := range folders {
		if fake.Watched(d) {
			n++
		}
	}
	if !fake.Watched(filepath.Join(dir, "outputs", "d")) || n == 0 || n > maxOutputsWatches {
		t.Errorf("%d of the %d folders below outputs/d watched, want 1 to %d", n, len(folders), maxOutputsWatches)
	}
}
