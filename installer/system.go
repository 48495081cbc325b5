package installer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"

	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/privsep"
)

// SystemLabel names the LaunchDaemon and the systemd system unit of system mode.
const SystemLabel = managedconfig.DaemonLabel

// SystemRestartCommand is how an admin starts (or, kill, restarts) system mode's daemon.
func SystemRestartCommand(goos string, kill bool) string {
	if goos == "darwin" {
		return "sudo launchctl kickstart -k system/" + SystemLabel
	}
	if kill {
		return "sudo systemctl restart " + SystemLabel + ".service"
	}
	return "sudo systemctl start " + SystemLabel + ".service"
}

// SystemInstalled reports whether system mode's daemon is installed on this machine (its
// LaunchDaemon, or its systemd system unit), whether or not it runs.
func SystemInstalled(goos string) bool {
	name := SystemLabel + ".service"
	if goos == "darwin" {
		name = SystemLabel + ".plist"
	}
	_, err := os.Lstat(filepath.Join(systemUnitDir(goos), name))
	return err == nil
}

// systemUnitDir is where the platform's service manager reads system daemons.
func systemUnitDir(goos string) string {
	if goos == "darwin" {
		return "/Library/LaunchDaemons"
	}
	return "/etc/systemd/system"
}

// systemUnitPath is the LaunchDaemon's plist or the system unit.
func (in *Installer) systemUnitPath() string {
	if in.goos == "darwin" {
		return filepath.Join(in.systemUnitDir, SystemLabel+".plist")
	}
	return filepath.Join(in.systemUnitDir, SystemLabel+".service")
}

// InstallSystem installs system mode (needs root; the MDM package's post-install): the root
// daemon serving every user (a LaunchDaemon, a systemd system unit on Linux), started now, and
// the managed-settings drop-in whose hook hands each call to it. Per-user agents are left to
// uninstall: a Mac with both runs both, and their hooks stand aside for each other's sessions.
func (in *Installer) InstallSystem(cfg managedconfig.Config) error {
	if os.Geteuid() != 0 && !in.dryRun {
		return errors.New("install --system needs root (run it from the MDM package's post-install script); without admin rights install the per-user agent: coworkbridge install")
	}
	in.system = true
	if err := in.checkHookProgram(); err != nil {
		return err
	}
	if in.goos != "darwin" && !in.dryRun && !in.systemd() {
		return errors.New("install --system needs systemd as this machine's init (/run/systemd/system is missing), so nothing was installed; " +
			"use the per-user agent (coworkbridge install), or run `coworkbridge run --system` as root under this machine's own service manager")
	}
	def := systemUnitFor(in.exe)
	if in.goos == "darwin" {
		def = systemPlistFor(in.exe)
	}
	if in.dryRun {
		fmt.Fprintf(in.out, "# %s\n%s\n", in.systemUnitPath(), def)
	} else if err := writeRootFile(in.systemUnitPath(), def); err != nil {
		return err
	}
	var err error
	if in.goos == "darwin" {
		err = in.launchdSystemLoad()
	} else {
		err = in.systemdSystemLoad()
	}
	if err != nil && !in.dryRun {
		// Nothing half-done: a definition the service manager would not start goes again.
		if rmErr := os.Remove(in.systemUnitPath()); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			return fmt.Errorf("%w; and removing %s again failed: %v", err, in.systemUnitPath(), rmErr)
		}
		return fmt.Errorf("%w; %s was removed again, and nothing is installed", err, in.systemUnitPath())
	}
	if err != nil {
		return err
	}
	return in.WriteDropIn(cfg)
}

// systemd reports whether systemd is this machine's init, as sd_booted(3) tells.
func (in *Installer) systemd() bool {
	if in.systemdRuns != nil {
		return in.systemdRuns()
	}
	fi, err := os.Lstat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// UninstallSystem stops and removes the root daemon and the drop-in, then takes our hooks out
// of every user's sessions (the daemon would otherwise have put them back).
func (in *Installer) UninstallSystem(purge bool) error {
	if os.Geteuid() != 0 && !in.dryRun {
		return errors.New("uninstall --system needs root")
	}
	if in.goos == "darwin" {
		in.cmd(true, "launchctl", "bootout", "system/"+SystemLabel)
	} else {
		in.cmd(true, "systemctl", "disable", "--now", SystemLabel+".service")
	}
	var errs []error
	if in.dryRun {
		fmt.Fprintf(in.out, "rm -f %q\n", in.systemUnitPath())
	} else if err := os.Remove(in.systemUnitPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("remove %s: %w", in.systemUnitPath(), err))
	}
	errs = append(errs, in.RemoveDropIn())
	if in.dryRun {
		fmt.Fprintf(in.out, "%s unhook%s   # as each user\n", shellQuote([]string{in.exe}), map[bool]string{true: " --purge-worker-state"}[purge])
	} else {
		n, err := in.unhookEveryUser(purge)
		errs = append(errs, err)
		fmt.Fprintf(in.out, "coworkbridge system daemon removed; hooks taken out of %d sessions\n", n)
	}
	return errors.Join(append(errs, in.purgeSystem(purge))...)
}

// purgeSystem removes, with purge, the system daemon's logs and state (root's own folders; each
// user's worker state went with their unhook, as them); without, it says where they were kept.
func (in *Installer) purgeSystem(purge bool) error {
	sys, err := managedconfig.Env{GOOS: in.goos, System: true, Getenv: func(string) string { return "" }}.Paths()
	if err != nil {
		return err
	}
	if !purge {
		fmt.Fprintf(in.out, "logs kept in %s, state in %s (--purge removes them, and each user's worker state)\n", sys.LogDir, sys.StateDir)
		return nil
	}
	var errs []error
	for _, d := range []string{sys.StateDir, sys.DropDir, sys.LogDir} {
		if in.dryRun {
			fmt.Fprintf(in.out, "rm -rf %q\n", d)
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
		}
	}
	if !in.dryRun && len(errs) == 0 {
		fmt.Fprintf(in.out, "logs and state purged (%s, %s)\n", sys.LogDir, sys.StateDir)
	}
	return errors.Join(errs...)
}

// unhookEveryUser takes our hooks out of the sessions of each user the daemon served, each as
// that user (as the daemon's workers did their work): root rewrites no user's file.
func (in *Installer) unhookEveryUser(purge bool) (int, error) {
	people, err := privsep.People(in.goos)
	if err != nil {
		return 0, fmt.Errorf("list the users whose sessions to unhook: %w", err)
	}
	total := 0
	var errs []error
	for _, u := range people {
		n, err := unhookAs(Target{Name: u.Name, UID: int(u.UID), GID: int(u.GID), Home: u.Home}, purge)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		total += n
	}
	return total, errors.Join(errs...)
}

func (in *Installer) launchdSystemLoad() error {
	service := "system/" + SystemLabel
	in.cmd(true, "launchctl", "bootout", service)
	if err := in.cmd(false, "launchctl", "enable", service); err != nil {
		return err
	}
	if err := in.cmd(false, "launchctl", "bootstrap", "system", in.systemUnitPath()); err != nil {
		return err
	}
	if err := in.cmd(false, "launchctl", "print", service); err != nil {
		return fmt.Errorf("installed but launchd does not list the daemon: %w", err)
	}
	if !in.dryRun {
		fmt.Fprintf(in.out, "coworkbridge system daemon installed: %s\n", in.systemUnitPath())
	}
	return nil
}

func (in *Installer) systemdSystemLoad() error {
	for _, args := range [][]string{{"daemon-reload"}, {"enable", "--now", SystemLabel + ".service"}, {"is-active", SystemLabel + ".service"}} {
		if err := in.cmd(false, "systemctl", args...); err != nil {
			return err
		}
	}
	if !in.dryRun {
		fmt.Fprintf(in.out, "coworkbridge system unit installed and started: %s\n", in.systemUnitPath())
	}
	return nil
}

// writeRootFile writes a service definition root owns, readable by all (launchd refuses a
// LaunchDaemon plist that others can write).
func writeRootFile(path string, data []byte) error {
	if err := renameio.WriteFile(path, data, 0o644, renameio.WithStaticPermissions(0o644)); err != nil {
		return fmt.Errorf("write %s (needs root): %w", path, err)
	}
	return nil
}

// systemPlistFor is the LaunchDaemon: started at boot, kept alive, its output in root's log
// folder.
func systemPlistFor(exe string) []byte {
	esc := xmlText
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>` + SystemLabel + `</string>
	<key>ProgramArguments</key>
	<array>
		<string>` + esc(exe) + `</string>
		<string>run</string>
		<string>--system</string>
	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<true/>
	<key>ThrottleInterval</key>
	<integer>10</integer>
	<key>StandardOutPath</key>
	<string>/Library/Logs/CoworkBridge/daemon.log</string>
	<key>StandardErrorPath</key>
	<string>/Library/Logs/CoworkBridge/daemon.log</string>
</dict>
</plist>
`)
}

// systemUnitFor is the systemd system unit: the same lifecycle, as root.
func systemUnitFor(exe string) []byte {
	return []byte(`[Unit]
Description=coworkbridge (system mode): organisation policy for Claude Cowork sessions of every user
After=local-fs.target

[Service]
ExecStart=` + systemdQuote(exe) + ` run --system
Restart=always
RestartSec=10
KillSignal=SIGTERM
TimeoutStopSec=10
UMask=0077

[Install]
WantedBy=multi-user.target
`)
}
