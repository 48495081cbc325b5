package managedconfig

import (
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

func testEnv(vars map[string]string) Env {
	return Env{GOOS: "darwin", Home: "/Users/ada", Getenv: func(k string) string { return vars[k] }}
}

func mustPaths(t *testing.T, env Env) Paths {
	t.Helper()
	p, err := env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseMinimalFileGetsEveryDefault(t *testing.T) {
	env := testEnv(nil)
	cfg, err := Parse([]byte(`{"version": 1}`), "managed.json", env, mustPaths(t, env))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Version: 1, CoworkEnabled: false, Mode: Observe,
		SessionsRoots: []string{
			"/Users/ada/Library/Application Support/Claude/local-agent-mode-sessions",
			"/Users/ada/Library/Application Support/Claude-3p/local-agent-mode-sessions",
		},
		HookTimeout: 30 * time.Second, DecisionTimeout: 10 * time.Second,
		HeartbeatInterval: 5 * time.Minute, RescanInterval: 30 * time.Second,
		MaxLineBytes: 4 << 20,
		Telemetry: Telemetry{
			Path:      "/Users/ada/Library/Logs/CoworkBridge/decisions.jsonl",
			MaxFileMB: 50, MaxFiles: 5, Redact: true, Inputs: "all", RetainedMinDays: 30,
		},
		LogLevel: slog.LevelInfo,
	}
	cfg.Policy.Places = nil // TestThePlacesFollowTheFoldersTheConfigurationNames
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
}

func TestParseFullFileSetsEveryField(t *testing.T) {
	env := testEnv(nil)
	data := `{
	  "version": 1,
	  "cowork_enabled": true,
	  "mode": "enforce",
	  "sessions_roots": ["~/sessions", "/srv/cowork/"],
	  "hook_timeout": "1m",
	  "decision_timeout": "20s",
	  "heartbeat_interval": "1h",
	  "rescan_interval": "5s",
	  "max_line_bytes": 65536,
	  "policy": {
	    "rules_dirs": ["~/rules"],
	    "disabled_rules": ["bash.git-push-force"],
	    "rule_modes": {"bash.sudo": "observe", "path.ssh": "enforce"},
	    "allowed_executables": ["terraform", "kubectl"],
	    "allowed_mcp_servers": [],
	    "quarantine_on_injection": true
	  },
	  "telemetry": {"path": "/var/log/cb/decisions.jsonl", "max_file_mb": 10, "max_files": 3, "redact": false, "inputs": "metadata", "read_group": "admin", "retained_min_days": 90},
	  "log_level": "debug"
	}`
	cfg, err := Parse([]byte(data), "managed.json", env, mustPaths(t, env))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Version: 1, CoworkEnabled: true, Mode: Enforce,
		SessionsRoots:     []string{"/Users/ada/sessions", "/srv/cowork"},
		HookTimeout:       time.Minute,
		DecisionTimeout:   20 * time.Second,
		HeartbeatInterval: time.Hour,
		RescanInterval:    5 * time.Second,
		MaxLineBytes:      65536,
		Policy: Policy{
			RulesDirs:             []string{"/Users/ada/rules"},
			DisabledRules:         []string{"bash.git-push-force"},
			RuleModes:             map[string]Mode{"bash.sudo": Observe, "path.ssh": Enforce},
			AllowedExecutables:    []string{"terraform", "kubectl"},
			AllowedMCPServers:     []string{},
			RestrictMCPServers:    true,
			MCPServers:            []MCPServer{},
			QuarantineOnInjection: true,
		},
		Telemetry: Telemetry{Path: "/var/log/cb/decisions.jsonl", MaxFileMB: 10, MaxFiles: 3, Redact: false, Inputs: "metadata", ReadGroup: "admin", RetainedMinDays: 90},
		LogLevel:  slog.LevelDebug,
	}
	cfg.Policy.Places = nil // TestThePlacesFollowTheFoldersTheConfigurationNames
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("full file:\n got %+v\nwant %+v", cfg, want)
	}
}

func TestParseAbsentMCPListAllowsEveryServer(t *testing.T) {
	env := testEnv(nil)
	cfg, err := Parse([]byte(`{"version":1,"policy":{}}`), "m", env, mustPaths(t, env))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Policy.RestrictMCPServers {
		t.Error("an absent allowed_mcp_servers must not restrict MCP servers")
	}
}

// Each row is one mistake an admin could make; the message must name the field, show the value and
// say what is allowed.
func TestParseRejectsWithMessageNamingFieldValueAndAllowed(t *testing.T) {
	tests := []struct {
		name string
		json string
		want []string // substrings of the single problem reported
	}{
		{"missing version", `{}`, []string{"version: missing", `"version": 1`}},
		{"future version", `{"version": 2}`, []string{"version: 2 is not supported", "version 1"}},
		{"version as string", `{"version": "1"}`, []string{"version: got string \"1\"", "whole number"}},
		{"fractional version", `{"version": 1.5}`, []string{"version: got number 1.5", "whole number"}},
		{"unknown field", `{"version":1,"mdoe":"enforce"}`, []string{"mdoe: unknown field; did you mean mode?"}},
		{"unknown field near none", `{"version":1,"colour":"red"}`, []string{"colour: unknown field; the fields here are"}},
		{"duplicate nested field", `{"version":1,"policy":{"disabled_rules":[],"disabled_rules":["x"]}}`, []string{`policy.disabled_rules: field "disabled_rules" appears twice`}},
		{"unknown nested field", `{"version":1,"policy":{"allow":[]}}`, []string{"policy.allow: unknown field", "allowed_executables"}},
		{"enabled as string", `{"version":1,"cowork_enabled":"yes"}`, []string{`cowork_enabled: got string "yes"`, "true or false"}},
		{"enabled null", `{"version":1,"cowork_enabled":null}`, []string{"cowork_enabled: got null"}},
		{"bad mode", `{"version":1,"mode":"block"}`, []string{`mode: "block" is not a mode`, `"observe"`, `"enforce"`}},
		{"mode as number", `{"version":1,"mode":1}`, []string{"mode: got number 1", "want a string"}},
		{"roots not a list", `{"version":1,"sessions_roots":"/a"}`, []string{"sessions_roots: got string", "list of strings"}},
		{"roots empty", `{"version":1,"sessions_roots":[]}`, []string{"sessions_roots: the list is empty"}},
		{"root relative", `{"version":1,"sessions_roots":["sessions"]}`, []string{`sessions_roots[0]: "sessions"`, "absolute path"}},
		{"root of another user", `{"version":1,"sessions_roots":["~bob/x"]}`, []string{`sessions_roots[0]: "~bob/x"`, "~user is not supported"}},
		{"root blank", `{"version":1,"sessions_roots":[" "]}`, []string{"sessions_roots[0]: is empty"}},
		{"root not a string", `{"version":1,"sessions_roots":[3]}`, []string{"sessions_roots[0]: got number 3"}},
		{"duration as number", `{"version":1,"hook_timeout":30}`, []string{"hook_timeout: got number 30", "want a string"}},
		{"duration garbage", `{"version":1,"heartbeat_interval":"5 minutes"}`, []string{`heartbeat_interval: "5 minutes" is not a duration`, `"30s"`}},
		{"interval below 1s", `{"version":1,"rescan_interval":"500ms"}`, []string{"rescan_interval: 500ms is out of range", "1s to 10m0s"}},
		{"heartbeat above a day", `{"version":1,"heartbeat_interval":"25h"}`, []string{"heartbeat_interval: 25h0m0s is out of range"}},
		{"hook timeout above 10m", `{"version":1,"hook_timeout":"11m"}`, []string{"hook_timeout: 11m0s is out of range"}},
		{"hook timeout fractional", `{"version":1,"hook_timeout":"30500ms","decision_timeout":"5s"}`, []string{"hook_timeout: 30.5s is not a whole number of seconds"}},
		{"decision more than half", `{"version":1,"hook_timeout":"10s","decision_timeout":"6s"}`, []string{"decision_timeout: 6s is more than half of hook_timeout (10s)", "at most 5s"}},
		{"default decision vs short hook", `{"version":1,"hook_timeout":"15s"}`, []string{"decision_timeout: 10s is more than half of hook_timeout (15s)"}},
		{"line bytes too small", `{"version":1,"max_line_bytes":100}`, []string{"max_line_bytes: 100 is out of range", "1024"}},
		{"line bytes too large", `{"version":1,"max_line_bytes":1e12}`, []string{"max_line_bytes: got number 1e12", "whole number"}},
		{"line bytes as string", `{"version":1,"max_line_bytes":"4MiB"}`, []string{`max_line_bytes: got string "4MiB"`}},
		{"policy not an object", `{"version":1,"policy":[]}`, []string{"policy: got a list, want a JSON object"}},
		{"disabled rule with spaces", `{"version":1,"policy":{"disabled_rules":["Git Push"]}}`, []string{`policy.disabled_rules[0]: "Git Push" is not a rule id`}},
		{"rule mode bad", `{"version":1,"policy":{"rule_modes":{"bash.sudo":"off"}}}`, []string{`policy.rule_modes.bash.sudo: "off" is not a mode`}},
		{"rule mode bad id", `{"version":1,"policy":{"rule_modes":{"Bad Id":"observe"}}}`, []string{`policy.rule_modes.Bad Id: "Bad Id" is not a rule id`}},
		{"executable with path", `{"version":1,"policy":{"allowed_executables":["/usr/bin/git"]}}`, []string{`policy.allowed_executables[0]: "/usr/bin/git" is not a bare command name`}},
		{"rules dir relative", `{"version":1,"policy":{"rules_dirs":["rules"]}}`, []string{`policy.rules_dirs[0]: "rules"`, "absolute"}},
		{"telemetry files zero", `{"version":1,"telemetry":{"max_files":0}}`, []string{"telemetry.max_files: 0 is out of range; allowed from 1 to 100"}},
		{"telemetry inputs unknown", `{"version":1,"telemetry":{"inputs":"some"}}`, []string{`telemetry.inputs: "some" is not a choice`}},
		{"telemetry read group not a group name", `{"version":1,"telemetry":{"read_group":"admin; rm"}}`, []string{`telemetry.read_group: "admin; rm" is not a group name`}},
		{"telemetry size huge", `{"version":1,"telemetry":{"max_file_mb":99999}}`, []string{"telemetry.max_file_mb: 99999 is out of range"}},
		{"telemetry path relative", `{"version":1,"telemetry":{"path":"d.jsonl"}}`, []string{`telemetry.path: "d.jsonl"`, "absolute"}},
		{"telemetry redact string", `{"version":1,"telemetry":{"redact":"no"}}`, []string{`telemetry.redact: got string "no"`}},
		{"log level", `{"version":1,"log_level":"verbose"}`, []string{`log_level: "verbose" is not a level`, "debug, info, warn or error"}},
		{"duplicate key", `{"version":1,"mode":"enforce","mode":"observe"}`, []string{`field "mode" appears twice`}},
		{"trailing data", `{"version":1} {"mode":"observe"}`, []string{"unexpected data after the JSON object", "line 1 column 15"}},
		{"trailing garbage", "{\"version\":1}\nx", []string{"line 2"}},
		{"syntax error", "{\n \"version\": 1,\n}", []string{"not valid JSON at line 3"}},
		{"truncated", `{"version": 1, "mode": "enf`, []string{"not valid JSON"}},
		{"empty file", ``, []string{"ends before the JSON object is complete"}},
		{"array top level", `[1]`, []string{"got a list, want a JSON object"}},
		{"string top level", `"x"`, []string{"want a JSON object"}},
	}
	env := testEnv(nil)
	paths := mustPaths(t, env)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.json), "managed.json", env, paths)
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("got %v, want an *InvalidError", err)
			}
			if len(inv.Problems) != 1 {
				t.Fatalf("got %d problems, want 1: %v", len(inv.Problems), err)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
		})
	}
}

func TestParseListsEveryProblemAtOnce(t *testing.T) {
	env := testEnv(nil)
	data := `{"mode":"on","hook_timeout":"x","telemetry":{"max_files":0,"colour":"red"},"extra":1}`
	_, err := Parse([]byte(data), "/etc/managed.json", env, mustPaths(t, env))
	var inv *InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("got %v, want *InvalidError", err)
	}
	fields := map[string]bool{}
	for _, p := range inv.Problems {
		fields[p.Field] = true
	}
	for _, f := range []string{"version", "mode", "hook_timeout", "telemetry.max_files", "telemetry.colour", "extra"} {
		if !fields[f] {
			t.Errorf("no problem reported for %s in:\n%v", f, err)
		}
	}
	if !strings.HasPrefix(err.Error(), "invalid managed config /etc/managed.json (6 problems):") {
		t.Errorf("message does not start with the source and count: %q", err)
	}
}

func TestEnvSessionsRootReplacesConfiguredRoots(t *testing.T) {
	tests := []struct {
		name, value string
		want        []string
		wantErr     string
	}{
		{"single", "/tmp/roots", []string{"/tmp/roots"}, ""},
		{"list", "/a:~/b:", []string{"/a", "/Users/ada/b"}, ""},
		{"relative", "roots", nil, "COWORKBRIDGE_SESSIONS_ROOT: \"roots\""},
		{"only separators", ":::", nil, "names no folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(map[string]string{EnvSessionsRoot: tt.value})
			cfg, err := Parse([]byte(`{"version":1,"sessions_roots":["/configured"]}`), "m", env, mustPaths(t, env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.SessionsRoots, tt.want) {
				t.Errorf("got %q, want %q", cfg.SessionsRoots, tt.want)
			}
		})
	}
}

func TestPathsPerPlatformAndOverrides(t *testing.T) {
	tests := []struct {
		name      string
		goos      string
		vars      map[string]string
		state     string
		log       string
		wantError string
	}{
		{"mac", "darwin", nil, "/Users/ada/Library/Application Support/CoworkBridge", "/Users/ada/Library/Logs/CoworkBridge", ""},
		{"linux default", "linux", nil, "/Users/ada/.local/state/coworkbridge", "/Users/ada/.local/state/coworkbridge", ""},
		{"linux xdg", "linux", map[string]string{"XDG_STATE_HOME": "/xdg"}, "/xdg/coworkbridge", "/xdg/coworkbridge", ""},
		{"linux relative xdg ignored", "linux", map[string]string{"XDG_STATE_HOME": "rel"}, "/Users/ada/.local/state/coworkbridge", "/Users/ada/.local/state/coworkbridge", ""},
		{"overrides", "darwin", map[string]string{EnvStateDir: "/s", EnvLogDir: "~/logs"}, "/s", "/Users/ada/logs", ""},
		{"relative override", "darwin", map[string]string{EnvStateDir: "s"}, "", "", "COWORKBRIDGE_STATE_DIR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Env{GOOS: tt.goos, Home: "/Users/ada", Getenv: func(k string) string { return tt.vars[k] }}
			p, err := env.Paths()
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("got %v, want error naming %s", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.StateDir != tt.state || p.LogDir != tt.log {
				t.Errorf("got %+v, want state %s log %s", p, tt.state, tt.log)
			}
		})
	}
}

func TestConfigCandidatesPutEnvironmentFirst(t *testing.T) {
	tests := []struct {
		goos string
		vars map[string]string
		want []string
	}{
		{"darwin", nil, []string{"/Library/Managed Preferences/com.coworkbridge.agent.plist", "/Library/Application Support/CoworkBridge/managed.json"}},
		{"linux", nil, []string{"/etc/coworkbridge/managed.json"}},
		{"linux", map[string]string{EnvManagedConfig: "/tmp/m.json"}, []string{"/tmp/m.json", "/etc/coworkbridge/managed.json"}},
	}
	for _, tt := range tests {
		env := Env{GOOS: tt.goos, Home: "/h", Getenv: func(k string) string { return tt.vars[k] }}
		if got := env.ConfigCandidates(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s %v: got %q, want %q", tt.goos, tt.vars, got, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"version":1,"mode":"enforce","policy":{"rule_modes":{"a":"observe"}}}`))
	f.Add([]byte(`{"version":1} trailing`))
	f.Add([]byte(`{"version":1,"version":1}`))
	f.Add([]byte(`[`))
	env := testEnv(nil)
	paths, _ := env.Paths()
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz", env, paths)
		if err != nil {
			var inv *InvalidError
			if !errors.As(err, &inv) || len(inv.Problems) == 0 {
				t.Fatalf("error %v is not an InvalidError with problems", err)
			}
			return
		}
		// Whatever is accepted must hold the invariants the daemon relies on.
		if cfg.Mode != Observe && cfg.Mode != Enforce {
			t.Fatalf("accepted mode %q", cfg.Mode)
		}
		if cfg.DecisionTimeout > cfg.HookTimeout/2 || cfg.DecisionTimeout < time.Second {
			t.Fatalf("accepted decision %v with hook %v", cfg.DecisionTimeout, cfg.HookTimeout)
		}
		if len(cfg.SessionsRoots) == 0 {
			t.Fatal("accepted a config with no sessions root")
		}
	})
}

func TestLockdownFieldsAreReadAndCheckedForWhatTheDropInCanCarry(t *testing.T) {
	env := testEnv(nil)
	paths := mustPaths(t, env)
	cfg, err := Parse([]byte(`{"version":1,"lockdown":true,"required_minimum_version":"2.1.329","force_remote_settings_refresh":true,
		"allowed_settings":["statusLine","env.HTTPS_PROXY","hooks.Stop"],"policy":{"allowed_mcp_servers":["github"]}}`), "m", env, paths)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Lockdown || cfg.RequiredMinimumVersion != "2.1.329" || len(cfg.AllowedSettings) != 3 || !cfg.ForceRemoteSettingsRefresh {
		t.Errorf("read %+v", cfg)
	}
	for _, bad := range []string{
		`{"version":1,"required_minimum_version":"latest"}`,
		`{"version":1,"allowed_settings":["has space"]}`,
		`{"version":1,"allowed_settings":["hooks.Stopp"]}`,
		`{"version":1,"lockdown":"yes"}`,
		`{"version":1,"force_remote_settings_refresh":true}`,
		`{"version":1,"lockdown":true,"force_remote_settings_refresh":"yes"}`,
		`{"version":1,"lockdown":true,"policy":{"allowed_mcp_servers":["my server"]}}`,
	} {
		if _, err := Parse([]byte(bad), "m", env, paths); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	if _, err := Parse([]byte(`{"version":1,"policy":{"allowed_mcp_servers":["my server"]}}`), "m", env, paths); err != nil {
		t.Errorf("without lockdown any server name is the classifier's to match: %v", err)
	}
}

func TestAllowedMCPServersTakeNamesOrWhatEachServerStarts(t *testing.T) {
	env := testEnv(nil)
	paths := mustPaths(t, env)
	cfg, err := Parse([]byte(`{"version":1,"policy":{"allowed_mcp_servers":["docs",
		{"name":"github","command":["npx","-y","@modelcontextprotocol/server-github"]},
		{"name":"linear","url":"https://mcp.linear.app/*"}]}}`), "m", env, paths)
	if err != nil {
		t.Fatal(err)
	}
	want := []MCPServer{{Name: "docs"}, {Name: "github", Command: []string{"npx", "-y", "@modelcontextprotocol/server-github"}}, {Name: "linear", URL: "https://mcp.linear.app/*"}}
	if !reflect.DeepEqual(cfg.Policy.MCPServers, want) || !reflect.DeepEqual(cfg.Policy.AllowedMCPServers, []string{"docs", "github", "linear"}) {
		t.Errorf("servers %+v, names %q", cfg.Policy.MCPServers, cfg.Policy.AllowedMCPServers)
	}
	for _, bad := range []string{
		`{"name":"x","command":["a"],"url":"b"}`, `{"command":["a"]}`, `{"name":"x","command":[]}`,
		`{"name":"x","cmd":["a"]}`, `{"name":"x","command":"npx"}`,
	} {
		if _, err := Parse([]byte(`{"version":1,"policy":{"allowed_mcp_servers":[`+bad+`]}}`), "m", env, paths); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

func TestAllowedAgentsAreBareProgramNames(t *testing.T) {
	env := testEnv(nil)
	paths := mustPaths(t, env)
	cfg, err := Parse([]byte(`{"version":1,"policy":{"allowed_agents":["codex","acme-agent"]}}`), "m", env, paths)
	if err != nil || !reflect.DeepEqual(cfg.Policy.AllowedAgents, []string{"codex", "acme-agent"}) {
		t.Fatalf("%v %v", cfg.Policy.AllowedAgents, err)
	}
	if _, err := Parse([]byte(`{"version":1,"policy":{"allowed_agents":["/usr/local/bin/codex"]}}`), "m", env, paths); err == nil || !strings.Contains(err.Error(), "agent program's bare name") {
		t.Errorf("a path was taken: %v", err)
	}
}
