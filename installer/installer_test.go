package installer

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/coworkbridge/coworkbridge/dropin"
	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/settingsschema"
)

// fakeRunner records commands and fails the ones listed.
type fakeRunner struct {
	calls []string
	fail  map[string]bool // by command line prefix
}

func (f *fakeRunner) run(name string, args ...string) (string, error) {
	line := shellQuote(append([]string{name}, args...))
	f.calls = append(f.calls, line)
	for prefix := range f.fail {
		if strings.HasPrefix(line, prefix) {
			return "Boot-out failed: 3: No such process", errors.New("exit status 3")
		}
	}
	if strings.HasPrefix(line, "stat -f %Su /dev/console") {
		return "alex\n", nil
	}
	return "", nil
}

const testExe = "/Library/Application Support/CoworkBridge/bin/coworkbridge"

// installedPrograms makes coworkbridge's binary and the hook programs named beside it, as a
// package installs them, and returns the binary's path.
func installedPrograms(t *testing.T, hooks ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "coworkbridge")
	for _, name := range append(hooks, "coworkbridge") {
		if err := os.WriteFile(filepath.Join(filepath.Dir(bin), name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

func testInstaller(goos string, r runner, out io.Writer, managedDir string) *Installer {
	return &Installer{goos: goos, exe: testExe, managedDir: managedDir, run: r, out: out}
}

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "install", name)
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, got, 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n%s", name, got)
	}
}

func TestAgentDefinitionsMatchTheirGoldenFiles(t *testing.T) {
	golden(t, "agent.plist", plistFor(testExe, "/Users/alex/Library/Logs/CoworkBridge"))
	golden(t, "agent.service", unitFor(testExe))
	sc, err := settingsschema.New()
	if err != nil {
		t.Fatal(err)
	}
	data, err := dropin.Content(dropin.Hook{Exe: testExe}, managedconfig.Config{}, sc)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, dropin.Name, data)
}

// plistValue is a minimal reader of XML property lists, enough to read the agent back.
type plistValue struct {
	kind string
	str  string
	arr  []plistValue
	dict map[string]plistValue
}

func readPlist(t *testing.T, data []byte) plistValue {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("plist: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "plist" {
			return readValue(t, d, nextStart(t, d))
		}
	}
}

func nextStart(t *testing.T, d *xml.Decoder) xml.StartElement {
	t.Helper()
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("plist: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se
		}
	}
}

func readValue(t *testing.T, d *xml.Decoder, se xml.StartElement) plistValue {
	t.Helper()
	v := plistValue{kind: se.Name.Local}
	switch v.kind {
	case "string", "integer", "key":
		var s string
		if err := d.DecodeElement(&s, &se); err != nil {
			t.Fatal(err)
		}
		v.str = s
	case "true", "false":
		d.Skip()
	case "array", "dict":
		v.dict = map[string]plistValue{}
		var key string
		for {
			tok, err := d.Token()
			if err != nil {
				t.Fatal(err)
			}
			if _, end := tok.(xml.EndElement); end {
				return v
			}
			child, ok := tok.(xml.StartElement)
			if !ok {
				continue
			}
			cv := readValue(t, d, child)
			switch {
			case v.kind == "array":
				v.arr = append(v.arr, cv)
			case cv.kind == "key":
				key = cv.str
			default:
				v.dict[key] = cv
			}
		}
	default:
		t.Fatalf("plist: unexpected <%s>", v.kind)
	}
	return v
}

func TestPlistReadsBackAsTheAgentLaunchdNeeds(t *testing.T) {
	exe := `/Applications/Odd & "Named" <App>/coworkbridge`
	p := readPlist(t, plistFor(exe, "/Users/alex/Library/Logs/CoworkBridge")).dict
	if p["Label"].str != Label {
		t.Errorf("Label %q", p["Label"].str)
	}
	args := p["ProgramArguments"].arr
	if len(args) != 2 || args[0].str != exe || args[1].str != "run" {
		t.Errorf("ProgramArguments %+v", args)
	}
	if p["RunAtLoad"].kind != "true" || p["KeepAlive"].dict["SuccessfulExit"].kind != "false" {
		t.Error("the agent must start at login and be restarted when it fails")
	}
	if p["ProcessType"].str != "Background" || p["ThrottleInterval"].str == "" {
		t.Errorf("ProcessType %q ThrottleInterval %q", p["ProcessType"].str, p["ThrottleInterval"].str)
	}
	if !strings.HasPrefix(p["StandardErrorPath"].str, "/Users/alex/Library/Logs/CoworkBridge/") {
		t.Errorf("StandardErrorPath %q", p["StandardErrorPath"].str)
	}
}

func TestInstallOnMacWritesTheAgentAndUsesTheModernLaunchctlVerbs(t *testing.T) {
	home := t.TempDir()
	r := &fakeRunner{fail: map[string]bool{"launchctl bootout": true}} // nothing loaded yet
	var out bytes.Buffer
	in := testInstaller("darwin", r, &out, filepath.Join(home, "managed-settings.d"))
	tg := Target{Name: "alex", UID: 501, GID: 20, Home: home}
	if err := in.Install(tg); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"launchctl bootout gui/501/" + Label,
		"launchctl enable gui/501/" + Label,
		"launchctl bootstrap gui/501 " + filepath.Join(home, "Library/LaunchAgents", Label+".plist"),
		"launchctl print gui/501/" + Label,
	}
	if strings.Join(r.calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(r.calls, "\n"), strings.Join(want, "\n"))
	}
	data, err := os.ReadFile(in.agentPath(tg))
	if err != nil || !bytes.Equal(data, plistFor(testExe, in.logDir(tg))) {
		t.Errorf("plist not written: %v", err)
	}
	if fi, err := os.Stat(in.logDir(tg)); err != nil || !fi.IsDir() {
		t.Errorf("log folder not created: %v", err)
	}
	if err := in.WriteDropIn(managedconfig.Config{}); err == nil || !strings.Contains(err.Error(), "coworkbridge-userhook") {
		t.Fatalf("a drop-in naming a hook program that is not installed: %v, want it refused", err)
	}
	if _, err := os.Stat(filepath.Join(in.managedDir, dropin.Name)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused drop-in was written: %v", err)
	}
	in.exe = installedPrograms(t, "coworkbridge-userhook")
	if err := in.WriteDropIn(managedconfig.Config{}); err != nil {
		t.Fatal(err)
	}
	r.calls = nil
	if err := in.Uninstall(tg, false); err != nil {
		t.Fatal(err)
	}
	if err := in.RemoveDropIn(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(in.agentPath(tg)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plist left after uninstall: %v", err)
	}
	if _, err := os.Stat(in.logDir(tg)); err != nil {
		t.Errorf("logs must stay without --purge: %v", err)
	}
	if _, err := os.Stat(filepath.Join(in.managedDir, dropin.Name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("drop-in left after uninstall: %v", err)
	}
	if len(r.calls) != 1 || !strings.HasPrefix(r.calls[0], "launchctl bootout gui/501/") {
		t.Errorf("uninstall commands %v", r.calls)
	}
	if err := in.Uninstall(tg, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(in.logDir(tg)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("logs left after --purge: %v", err)
	}
}

func TestInstallReportsAFailedBootstrapWithWhatToCheck(t *testing.T) {
	r := &fakeRunner{fail: map[string]bool{"launchctl bootout": true, "launchctl bootstrap": true}}
	in := testInstaller("darwin", r, io.Discard, t.TempDir())
	err := in.Install(Target{Name: "alex", UID: 501, Home: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "logged in") {
		t.Errorf("err = %v", err)
	}
}

func TestInstallOnLinuxManagesASystemdUserUnit(t *testing.T) {
	home := t.TempDir()
	r := &fakeRunner{}
	in := testInstaller("linux", r, io.Discard, t.TempDir())
	if err := in.Install(Target{Name: "dev", UID: 1000, Home: home}); err != nil {
		t.Fatal(err)
	}
	want := "systemctl --user daemon-reload\nsystemctl --user enable --now " + Label + ".service\nsystemctl --user is-active " + Label + ".service"
	if got := strings.Join(r.calls, "\n"); got != want {
		t.Errorf("commands:\n%s\nwant:\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(home, ".config/systemd/user", Label+".service")); err != nil {
		t.Errorf("unit not written: %v", err)
	}
}

func TestDryRunPrintsEverythingAndTouchesNothing(t *testing.T) {
	home := t.TempDir()
	r := &fakeRunner{}
	var out bytes.Buffer
	in := testInstaller("darwin", r, &out, filepath.Join(home, "managed"))
	in.dryRun = true
	tg := Target{Name: "alex", UID: 501, Home: home}
	if err := in.Install(tg); err != nil {
		t.Fatal(err)
	}
	in.WriteDropIn(managedconfig.Config{})
	if len(r.calls) != 0 {
		t.Errorf("dry run ran %v", r.calls)
	}
	for _, want := range []string{"<key>Label</key>", "launchctl bootstrap gui/501", "launchctl print", `"command": "` + dropin.UserHookProgram(testExe) + `"`, `"args": [`, "warning: the drop-in's hook program"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out.String())
		}
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("dry run wrote %v", entries)
	}
}

func TestSystemWideFindsTheConsoleUser(t *testing.T) {
	in := testInstaller("darwin", &fakeRunner{}, io.Discard, t.TempDir())
	name, err := in.consoleUser()
	if err != nil || name != "alex" {
		t.Errorf("console user %q, %v", name, err)
	}
	in.run = runnerFunc(func(string, ...string) (string, error) { return "root\n", nil })
	if _, err := in.consoleUser(); err == nil {
		t.Error("root at the console (login window) must not be taken for a user")
	}
}

type runnerFunc func(string, ...string) (string, error)

func (f runnerFunc) run(name string, args ...string) (string, error) { return f(name, args...) }

// As root for another user (--system-wide), the agent's files belong to that user, or launchd
// would refuse them and the daemon could not write its logs.
func TestSystemWideInstallGivesTheFilesToTheUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files away")
	}
	home := t.TempDir()
	in := testInstaller("darwin", &fakeRunner{fail: map[string]bool{"launchctl bootout": true}}, io.Discard, t.TempDir())
	in.chown = true
	tg := Target{Name: "nobody", UID: 65534, GID: 65534, Home: home}
	if err := in.Install(tg); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{in.agentPath(tg), filepath.Dir(in.agentPath(tg)), in.logDir(tg), filepath.Join(home, "Library"), filepath.Join(home, "Library", "Logs")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || st.Gid != 65534 {
			t.Errorf("%s belongs to %d:%d, want the user's 65534:65534", p, st.Uid, st.Gid)
		}
	}
}

// uninstall takes our hooks out of every session of the user, right after it stops the agent
// (before, the daemon would put them back): an enforce hook left behind with no daemon to answer
// would deny every call in Cowork.
func TestUninstallRemovesOurHooksFromEverySessionRightAfterStoppingTheAgent(t *testing.T) {
	home := t.TempDir()
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(home, "none.json"))
	t.Setenv("COWORKBRIDGE_SESSIONS_ROOT", "")
	root := filepath.Join(home, "Library", "Application Support", "Claude", "local-agent-mode-sessions")
	env := managedconfig.Env{GOOS: "darwin", Home: home}
	cfg := managedconfig.Defaults(env, managedconfig.Paths{})
	cfg.Mode, cfg.CoworkEnabled = managedconfig.Enforce, true
	e, err := hookentry.NewEntry(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	var settings []string
	for _, id := range []string{"local_a", "local_b"} {
		dir := filepath.Join(root, "acct", "org", id, ".claude")
		os.MkdirAll(dir, 0o700)
		merged, _, _ := hookentry.Merge([]byte(`{"model":"opus"}`), e)
		os.WriteFile(filepath.Join(dir, "settings.json"), merged, 0o600)
		settings = append(settings, filepath.Join(dir, "settings.json"))
	}
	r := &fakeRunner{}
	var out bytes.Buffer
	in := testInstaller("darwin", r, &out, filepath.Join(home, "managed-settings.d"))
	stoppedFirst := false
	in.unhook = func(tg Target) (int, error) {
		stoppedFirst = len(r.calls) > 0 && strings.HasPrefix(r.calls[0], "launchctl bootout")
		return in.unhookSessions(tg)
	}
	if err := in.Uninstall(Target{Name: "alex", UID: 501, GID: 20, Home: home}, false); err != nil {
		t.Fatal(err)
	}
	if !stoppedFirst {
		t.Error("the hooks were removed before the agent was stopped: the daemon would put them back")
	}
	for _, s := range settings {
		data, _ := os.ReadFile(s)
		if strings.Contains(string(data), hookentry.Marker) || !strings.Contains(string(data), "opus") {
			t.Errorf("%s after uninstall: %s", s, data)
		}
	}
	if !strings.Contains(out.String(), "removed from 2 session(s) of alex") {
		t.Errorf("output %q", out.String())
	}
}

func TestATemporaryBuildIsRefusedWithWhatToDoInstead(t *testing.T) {
	if _, err := New("/tmp/go-build4151/b001/exe/coworkbridge", io.Discard, true); err == nil || !strings.Contains(err.Error(), "go run deletes") || !strings.Contains(err.Error(), "go build -o") {
		t.Errorf("a go run build, dry run: %v", err)
	}
	// This test binary is such a build: installing it as the default binary is refused too.
	if _, err := New("", io.Discard, true); err == nil || !strings.Contains(err.Error(), "this binary is") {
		t.Errorf("the running test binary: %v", err)
	}
}

// A binary built with go build -o into the temporary folder is not go run's: a dry run warns that
// the system empties that folder, and a real install refuses it for that reason.
func TestABinaryInTheTemporaryFolderIsWarnedAboutInADryRunAndRefusedOtherwise(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "coworkbridge")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	resolved, _ := filepath.EvalSymlinks(bin)
	var out strings.Builder
	if _, err := New(resolved, &out, true); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if !strings.Contains(out.String(), "temporary folder, which the system empties") {
		t.Errorf("dry run said %q", out.String())
	}
	_, err := New(resolved, io.Discard, false)
	if err == nil || strings.Contains(err.Error(), "go run") || !strings.Contains(err.Error(), "empties") {
		t.Errorf("install: %v", err)
	}
}

func TestAMissingBinaryIsRefusedAndOnlyWarnedAboutInADryRun(t *testing.T) {
	bin := "/nonexistent-coworkbridge-test/coworkbridge"
	if _, err := New(bin, io.Discard, false); err == nil || !strings.Contains(err.Error(), bin) {
		t.Errorf("install with a missing binary: %v", err)
	}
	var out strings.Builder
	if _, err := New(bin, &out, true); err != nil || !strings.Contains(out.String(), "warning: "+bin+" is not an executable file") {
		t.Errorf("dry run with a missing binary: %v, printed %q", err, out.String())
	}
}

func TestAnAccountWithNoHomeIsRefusedBeforeAnyPlanIsPrinted(t *testing.T) {
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody here")
	}
	if fi, err := os.Stat(u.HomeDir); err == nil && fi.IsDir() {
		t.Skipf("nobody has a home here (%s)", u.HomeDir)
	}
	var out strings.Builder
	in := &Installer{goos: "darwin", exe: testExe, out: &out, dryRun: true}
	_, err = in.Targets(true, []string{"nobody"})
	if err == nil || !strings.Contains(err.Error(), "has no home folder") {
		t.Errorf("targets: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("printed before refusing: %q", out.String())
	}
}

func TestTheUsersOwnHomeIsWhereTheAgentGoes(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	in := &Installer{goos: "linux", exe: testExe, out: io.Discard, dryRun: true}
	ts, err := in.Targets(false, nil)
	if err != nil || len(ts) != 1 || ts[0].Home != home {
		t.Fatalf("targets %+v, %v; want the user with home %s", ts, err, home)
	}
}
