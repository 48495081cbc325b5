package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"howett.net/plist"

	"github.com/coworkbridge/coworkbridge/installer"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
)

// The example files an admin copies into an MDM profile must be valid as they are.
func TestDeployExamplesAreValidManagedConfigs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "deploy", "*.json"))
	files = append(files, filepath.Join("..", "..", "examples", "managed.json"))
	if len(files) < 3 {
		t.Fatalf("expected the deploy examples, found %v", files)
	}
	env := managedconfig.Env{GOOS: "darwin", Home: "/Users/alex", Getenv: func(string) string { return "" }}
	paths, err := env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		// The whole check validate makes, rule folders included: an example must be valid on
		// any machine, not only on one where its folders exist.
		problems, cfg := policy.Validate(f, env, paths)
		if len(problems) > 0 {
			t.Errorf("%s: %v", f, problems)
			continue
		}
		if !cfg.CoworkEnabled {
			t.Errorf("%s does not switch coworkbridge on", f)
		}
	}
	profile := filepath.Join("..", "..", "deploy", "profile", "coworkbridge.mobileconfig")
	mc, results, whole := policy.ValidateProfile(profile, env, paths)
	if len(whole) > 0 || len(results) != 1 || len(results[0].Problems) > 0 || mc.Signed {
		t.Errorf("%s: profile problems %v, payloads %+v", profile, whole, results)
	}
}

// The example configuration profile: its coworkbridge payload is a valid configuration as
// macOS hands it over (managed preferences), and its managed login item names our agent.
func TestTheExampleProfileConfiguresAndLocksTheAgent(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "profile", "coworkbridge.mobileconfig"))
	if err != nil {
		t.Fatal(err)
	}
	var profile struct {
		PayloadType    string
		PayloadContent []map[string]any
	}
	if _, err := plist.Unmarshal(data, &profile); err != nil || profile.PayloadType != "Configuration" {
		t.Fatalf("not a configuration profile: %v %q", err, profile.PayloadType)
	}
	var settings, loginItems map[string]any
	for _, p := range profile.PayloadContent {
		switch p["PayloadType"] {
		case managedconfig.ProfileDomain:
			settings = p
		case "com.apple.servicemanagement":
			loginItems = p
		}
	}
	if settings == nil || loginItems == nil {
		t.Fatalf("payloads: settings %v, login items %v", settings != nil, loginItems != nil)
	}
	// macOS writes the payload's keys to the managed preferences file; Payload* keys among them.
	prefs, err := plist.Marshal(settings, plist.BinaryFormat)
	if err != nil {
		t.Fatal(err)
	}
	js, err := managedconfig.ProfileJSON(prefs)
	if err != nil {
		t.Fatal(err)
	}
	env := managedconfig.Env{GOOS: "darwin", Home: "/Users/alex", Getenv: func(string) string { return "" }}
	paths, _ := env.Paths()
	if cfg, err := managedconfig.Parse(js, "profile", env, paths); err != nil || !cfg.CoworkEnabled {
		t.Errorf("the profile's settings: %v (enabled %v)", err, cfg.CoworkEnabled)
	}
	// Both ways of installing are managed login items: the per-user agent and system mode's
	// LaunchDaemon.
	rules, _ := loginItems["Rules"].([]any)
	var labels []string
	for _, r := range rules {
		if r, ok := r.(map[string]any); ok && r["RuleType"] == "Label" {
			labels = append(labels, fmt.Sprint(r["RuleValue"]))
		}
	}
	if !slices.Equal(labels, []string{installer.Label, installer.SystemLabel}) {
		t.Errorf("login item labels %q, want %s and %s", labels, installer.Label, installer.SystemLabel)
	}
}

// fakeStatus is a coworkbridge binary that answers status with the given output and exit code.
func fakeStatus(t *testing.T, out string, code int) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "coworkbridge")
	script := "#!/bin/sh\ncat <<'JSON'\n" + out + "\nJSON\nexit " + strconv.Itoa(code) + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// The MDM scripts built on status: the Jamf extension attribute and the compliance check.
func TestTheMDMScriptsReportWhatStatusSays(t *testing.T) {
	warn := `{"running":true,"healthy":false,"snapshot":{"warnings":[{"code":"session_unhooked"},{"code": "config_invalid"}]}}`
	tests := []struct {
		name      string
		bin       string
		ea        string
		compliant bool
	}{
		{"healthy", fakeStatus(t, `{"running":true,"healthy":true}`, 0), "<result>healthy</result>", true},
		{"warnings", fakeStatus(t, warn, 1), "<result>warning: config_invalid,session_unhooked</result>", false},
		{"not running", fakeStatus(t, `{"running":false}`, 2), "<result>not running</result>", false},
		{"failing closed", fakeStatus(t, `{"running":true,"healthy":false}`, 3), "<result>blocking: every call denied, managed.json invalid</result>", false},
		{"not installed", filepath.Join(t.TempDir(), "missing"), "<result>not installed</result>", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ea := exec.Command("/bin/sh", filepath.Join("..", "..", "deploy", "jamf", "coworkbridge-status-ea.sh"))
			ea.Env = append(os.Environ(), "COWORKBRIDGE_BIN="+tt.bin)
			out, err := ea.Output()
			if err != nil || strings.TrimSpace(string(out)) != tt.ea {
				t.Errorf("extension attribute: %q %v, want %q", out, err, tt.ea)
			}
			c := exec.Command("/bin/sh", filepath.Join("..", "..", "deploy", "scripts", "coworkbridge-compliance.sh"))
			c.Env = append(os.Environ(), "COWORKBRIDGE_BIN="+tt.bin)
			said, err := c.Output()
			if (err == nil) != tt.compliant {
				t.Errorf("compliance: %v, want compliant %v", err, tt.compliant)
			}
			if fixIt := strings.Contains(string(said), "reinstalling does not help"); fixIt != (tt.name == "failing closed") {
				t.Errorf("compliance advice to fix managed.json: %v; said %q", fixIt, said)
			}
		})
	}
}
