package managedconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"howett.net/plist"
)

const profileXML = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>PayloadUUID</key><string>5E0E4C1A-0000-4000-8000-000000000001</string>
	<key>version</key><integer>1</integer>
	<key>cowork_enabled</key><true/>
	<key>mode</key><string>enforce</string>
	<key>decision_timeout</key><string>5s</string>
	<key>policy</key>
	<dict>
		<key>rule_modes</key><dict><key>bash.git-push-force</key><string>observe</string></dict>
		<key>allowed_executables</key><array><string>terraform</string></array>
	</dict>
	<key>telemetry</key><dict><key>max_files</key><integer>3</integer></dict>
</dict>
</plist>`

func darwinFixture(t *testing.T) (Env, Paths, string) {
	t.Helper()
	dir := t.TempDir()
	profile := filepath.Join(dir, ProfileDomain+".plist")
	env := Env{GOOS: "darwin", Home: filepath.Join(dir, "home"), Getenv: func(k string) string {
		switch k {
		case EnvManagedConfig:
			return profile
		case EnvStateDir:
			return filepath.Join(dir, "state")
		}
		return ""
	}}
	paths, err := env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	return env, paths, profile
}

// A configuration profile's managed preferences, XML or binary, configure coworkbridge as
// managed.json does, through the same strict parser.
func TestAConfigurationProfileConfiguresLikeManagedJSON(t *testing.T) {
	var v any
	if _, err := plist.Unmarshal([]byte(profileXML), &v); err != nil {
		t.Fatal(err)
	}
	binary, err := plist.Marshal(v, plist.BinaryFormat)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"xml": []byte(profileXML), "binary": binary} {
		t.Run(name, func(t *testing.T) {
			env, paths, profile := darwinFixture(t)
			os.WriteFile(profile, data, 0o644)
			s := NewDaemonLoader(env, paths).Load()
			if s.Origin != OriginFile || s.Problem != nil {
				t.Fatalf("origin %s: %v", s.Origin, s.Problem)
			}
			c := s.Config
			if !c.CoworkEnabled || c.Mode != Enforce || c.DecisionTimeout != 5*time.Second || c.Telemetry.MaxFiles != 3 ||
				c.Policy.RuleModes["bash.git-push-force"] != Observe || len(c.Policy.AllowedExecutables) != 1 {
				t.Errorf("config %+v", c)
			}
			// The last-good copy is the JSON form, so that a broken profile falls back on it.
			os.WriteFile(profile, []byte("<plist><dict><key>mode</key>"), 0o644)
			if s := NewLoader(env, paths).Load(); s.Origin != OriginLastGood || s.Config.Mode != Enforce {
				t.Errorf("a broken profile: origin %s mode %s (%v)", s.Origin, s.Config.Mode, s.Problem)
			}
		})
	}
}

func TestAProfileWithWrongTypesOrUnknownKeysIsInvalidWithEveryProblem(t *testing.T) {
	env, paths, profile := darwinFixture(t)
	os.WriteFile(profile, []byte(strings.Replace(profileXML, `<key>mode</key><string>enforce</string>`,
		`<key>mode</key><integer>2</integer><key>modes</key><string>x</string><key>when</key><date>2026-01-01T00:00:00Z</date>`, 1)), 0o644)
	s := NewLoader(env, paths).Load()
	if s.Origin != OriginInvalid || s.Problem == nil || !strings.Contains(s.Problem.Error(), "when: a date cannot be a coworkbridge setting") {
		t.Fatalf("a date: %s %v", s.Origin, s.Problem)
	}
	os.WriteFile(profile, []byte(strings.Replace(profileXML, `<key>mode</key><string>enforce</string>`,
		`<key>mode</key><integer>2</integer><key>modes</key><string>x</string>`, 1)), 0o644)
	s = NewLoader(env, paths).Load()
	if s.Origin != OriginInvalid || !strings.Contains(s.Problem.Error(), "mode:") || !strings.Contains(s.Problem.Error(), "modes: unknown field") {
		t.Errorf("wrong type and unknown key: %v", s.Problem)
	}
}

func FuzzProfileJSON(f *testing.F) {
	f.Add([]byte(profileXML))
	f.Add([]byte("bplist00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := ProfileJSON(data)
		if err == nil && !json.Valid(out) {
			t.Fatalf("invalid JSON from a profile: %q", out)
		}
	})
}
