package managedconfig

import (
	"testing"

	"github.com/coworkbridge/coworkbridge/hostsocket"
)

// The map follows the folders the file and the platform name: a decision log moved elsewhere,
// other sessions roots, the program that runs.
func TestThePlacesFollowTheFoldersTheConfigurationNames(t *testing.T) {
	env := Env{GOOS: "darwin", Home: "/Users/ada", Executable: "/usr/local/bin/coworkbridge"}
	paths, err := env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse([]byte(`{"version": 1, "cowork_enabled": true, "sessions_roots": ["/srv/cowork"],
		"telemetry": {"path": "/var/log/cb/decisions.jsonl"}}`), "managed.json", env, paths)
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{}
	for _, p := range cfg.Policy.Places {
		owners[p.Path] = p.Owner
	}
	for path, owner := range map[string]string{
		"/var/log/cb/decisions.jsonl":                                  OwnerGuard,
		"/Users/ada/Library/Application Support/CoworkBridge":          OwnerGuard,
		"/usr/local/bin/coworkbridge":                                  OwnerGuard,
		"/Users/ada/Library/LaunchAgents/com.coworkbridge.agent.plist": OwnerGuard,
		"/Library/Application Support/CoworkBridge/managed.json":       OwnerGuard,
		"/srv/cowork": OwnerSessions,
		"/Users/ada/Library/Application Support/Claude": OwnerApp,
		"/Users/ada/.claude/hooks":                      OwnerApp,
		"/Users/ada/.claude/settings":                   OwnerApp,
		"/Library/Application Support/ClaudeCode":       OwnerManaged,
	} {
		if owners[path] != owner {
			t.Errorf("%s is %q's, want %q's", path, owners[path], owner)
		}
	}
	if _, ok := owners["/Users/ada/Library/Application Support/Claude/local-agent-mode-sessions"]; ok {
		t.Error("a sessions root the file replaced is still on the map")
	}
}

// Whichever of coworkbridge's programs builds the map (the per-user hook program does, on every
// call), the programs installed beside it are on it: the hook must guard the daemon's binary as
// the daemon guards the hook's. Another program's map names only itself.
func TestEachOfOurProgramsProtectsTheOthersBesideIt(t *testing.T) {
	for _, tc := range []struct {
		exe  string
		want []string
		not  []string
	}{
		{"/opt/cb/coworkbridge-userhook", []string{"/opt/cb/coworkbridge", "/opt/cb/coworkbridge-hook", "/opt/cb/coworkbridge-userhook"}, nil},
		{"/opt/cb/coworkbridge-hook", []string{"/opt/cb/coworkbridge", "/opt/cb/coworkbridge-userhook"}, nil},
		{"/opt/cb/coworkbridge", []string{"/opt/cb/coworkbridge-hook", "/opt/cb/coworkbridge-userhook"}, nil},
		{"/opt/cb/managedconfig.test", []string{"/opt/cb/managedconfig.test"}, []string{"/opt/cb/coworkbridge"}},
	} {
		env := Env{GOOS: "linux", Home: "/home/ada", Executable: tc.exe}
		paths, err := env.Paths()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := Parse([]byte(`{"version": 1, "cowork_enabled": true}`), "managed.json", env, paths)
		if err != nil {
			t.Fatal(err)
		}
		owners := map[string]string{}
		for _, p := range cfg.Policy.Places {
			owners[p.Path] = p.Owner
		}
		for _, p := range tc.want {
			if owners[p] != OwnerGuard {
				t.Errorf("run as %s: %s is %q's, want coworkbridge's", tc.exe, p, owners[p])
			}
		}
		for _, p := range tc.not {
			if _, ok := owners[p]; ok {
				t.Errorf("run as %s: %s is on the map", tc.exe, p)
			}
		}
	}
}

// The system daemon listens where its Paths say, and coworkbridge-hook, which links no
// configuration, connects where hostsocket.DefaultPath says: the two must be one place on every
// platform.
func TestTheSystemSocketIsWhereTheSystemHookConnects(t *testing.T) {
	for _, goos := range []string{"darwin", "linux"} {
		p, err := Env{GOOS: goos, System: true, Getenv: func(string) string { return "" }}.Paths()
		if err != nil {
			t.Fatal(err)
		}
		if want := hostsocket.DefaultPath(goos); p.Socket != want {
			t.Errorf("%s: the daemon's socket is %s, the system hook connects to %s", goos, p.Socket, want)
		}
	}
}
