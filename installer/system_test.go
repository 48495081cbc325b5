package installer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/dropin"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/settingsschema"
)

func TestSystemDefinitionsMatchTheirGoldenFiles(t *testing.T) {
	golden(t, "daemon.plist", systemPlistFor(testExe))
	golden(t, "daemon.service", systemUnitFor(testExe))
	sc, err := settingsschema.New()
	if err != nil {
		t.Fatal(err)
	}
	data, err := dropin.Content(dropin.Hook{Exe: testExe, System: true}, managedconfig.Config{}, sc)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "system-"+dropin.Name, data)
}

func TestTheLaunchDaemonRunsTheSystemDaemonAsRootAndKeepsItAlive(t *testing.T) {
	p := readPlist(t, systemPlistFor(testExe))
	args := p.dict["ProgramArguments"].arr
	if len(args) != 3 || args[0].str != testExe || args[1].str != "run" || args[2].str != "--system" {
		t.Errorf("ProgramArguments %+v", args)
	}
	if p.dict["Label"].str != SystemLabel || p.dict["KeepAlive"].kind != "true" {
		t.Errorf("Label %q KeepAlive %q", p.dict["Label"].str, p.dict["KeepAlive"].kind)
	}
	if _, ok := p.dict["UserName"]; ok {
		t.Error("a LaunchDaemon with UserName would not run as root")
	}
}

func TestADryRunSystemInstallPrintsTheDaemonTheCommandsAndTheSystemDropIn(t *testing.T) {
	for _, goos := range []string{"darwin", "linux"} {
		t.Run(goos, func(t *testing.T) {
			var out bytes.Buffer
			r := &fakeRunner{}
			in := testInstaller(goos, r, &out, filepath.Join(t.TempDir(), "managed-settings.d"))
			in.dryRun, in.systemUnitDir = true, systemUnitDir(goos)
			if err := in.InstallSystem(managedconfig.Config{}); err != nil {
				t.Fatal(err)
			}
			text := out.String()
			want := map[string][]string{
				"darwin": {"/Library/LaunchDaemons/com.coworkbridge.daemon.plist", "launchctl bootstrap system", "coworkbridge-hook"},
				"linux":  {"/etc/systemd/system/com.coworkbridge.daemon.service", "systemctl enable --now com.coworkbridge.daemon.service", "coworkbridge-hook"},
			}[goos]
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Errorf("the dry run does not show %q:\n%s", w, text)
				}
			}
			if len(r.calls) != 0 {
				t.Errorf("a dry run ran %v", r.calls)
			}
		})
	}
}

func TestSystemInstallNeedsRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root")
	}
	in := testInstaller("darwin", &fakeRunner{}, &bytes.Buffer{}, t.TempDir())
	if err := in.InstallSystem(managedconfig.Config{}); err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Fatalf("got %v", err)
	}
}

// uninstall --system says where the logs and state were kept, and with --purge removes them:
// root's own folders by root, each user's worker state by that user's unhook.
func TestASystemUninstallSaysWhatItKeptAndPurgesOnlyWhenAsked(t *testing.T) {
	for _, goos := range []string{"darwin", "linux"} {
		for _, purge := range []bool{false, true} {
			var out bytes.Buffer
			in := testInstaller(goos, &fakeRunner{}, &out, filepath.Join(t.TempDir(), "managed-settings.d"))
			in.dryRun, in.systemUnitDir = true, systemUnitDir(goos)
			if err := in.UninstallSystem(purge); err != nil {
				t.Fatal(err)
			}
			text := out.String()
			logs := map[string]string{"darwin": "/Library/Logs/CoworkBridge", "linux": "/var/log/coworkbridge"}[goos]
			switch {
			case purge && (!strings.Contains(text, `rm -rf "`+logs+`"`) || !strings.Contains(text, "unhook --purge-worker-state")):
				t.Errorf("%s --purge does not remove the logs and the workers' state:\n%s", goos, text)
			case !purge && (strings.Contains(text, "rm -rf \""+logs) || !strings.Contains(text, "logs kept in "+logs)):
				t.Errorf("%s without --purge does not say what it kept:\n%s", goos, text)
			}
		}
	}
}

// install --system leaves nothing half-done: on Linux without systemd it says so and writes
// nothing; when the service manager will not start the daemon, the definition goes again.
func TestASystemInstallThatCannotStartLeavesNothingBehind(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("install --system needs root")
	}
	bin := installedPrograms(t, "coworkbridge-hook")
	for _, tc := range []struct {
		name, goos, fail, want string
		systemd                bool
	}{
		{"linux without systemd", "linux", "", "needs systemd", false},
		{"systemd refuses to start it", "linux", "systemctl enable", "nothing is installed", true},
		{"launchd refuses to load it", "darwin", "launchctl bootstrap", "nothing is installed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRunner{fail: map[string]bool{}}
			if tc.fail != "" {
				r.fail[tc.fail] = true
			}
			managed := filepath.Join(t.TempDir(), "managed-settings.d")
			in := testInstaller(tc.goos, r, &bytes.Buffer{}, managed)
			in.exe, in.systemUnitDir = bin, t.TempDir()
			in.systemdRuns = func() bool { return tc.systemd }
			err := in.InstallSystem(managedconfig.Config{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
			if _, err := os.Stat(in.systemUnitPath()); err == nil {
				t.Errorf("%s was left behind", in.systemUnitPath())
			}
			if _, err := os.Stat(filepath.Join(managed, dropin.Name)); err == nil {
				t.Error("the drop-in was written for a daemon that does not run")
			}
		})
	}
}
