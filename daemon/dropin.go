package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/coworkbridge/coworkbridge/dropin"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/settingsschema"
)

// dropInWant is the drop-in a configuration asks for, and whether it asks for one at all.
type dropInWant struct {
	content []byte
	// required: the configuration asks for what only the drop-in delivers (lockdown, a minimum
	// CLI version), so a missing drop-in is a fault, not a choice of the admin's.
	required bool
	// problem: the wanted drop-in could not be built.
	problem string
}

// wantDropIn records the drop-in configuration s asks for, and checks the installed one at once.
func (d *Daemon) wantDropIn(s managedconfig.Snapshot) {
	w := &dropInWant{}
	if s.Origin != managedconfig.OriginInvalid {
		cfg := s.Config
		w.required = cfg.Lockdown || cfg.RequiredMinimumVersion != ""
		sc, err := settingsschema.New()
		if err == nil {
			w.content, err = dropin.Content(dropin.Hook{Exe: d.exe, System: d.env.System}, cfg, sc)
		}
		if err != nil {
			w.problem = fmt.Sprintf("cannot build the drop-in managed.json asks for: %v", err)
		}
	}
	d.dropIn.Store(w)
	d.checkDropIn()
}

// checkDropIn compares the installed drop-in with the one wanted and tells health. It reads one
// small file; the heartbeat runs it at every beat.
func (d *Daemon) checkDropIn() {
	w := d.dropIn.Load()
	switch {
	case w == nil || w.content == nil && w.problem == "":
		d.health.SetDropIn("") // a broken managed.json: what it wants is unknown
		return
	case w.problem != "":
		d.health.SetDropIn(w.problem)
		return
	}
	var probs []error
	installed := true
	for _, err := range dropin.Check(d.dropDir, w.content) {
		installed = installed && !errors.Is(err, dropin.ErrMissing)
		if errors.Is(err, dropin.ErrMissing) && !w.required {
			continue // optional without lockdown: the session hook guards both loops
		}
		probs = append(probs, err)
	}
	if installed && d.exe != "" {
		if err := dropin.CheckProgram(dropin.Hook{Exe: d.exe, System: d.env.System}); err != nil {
			probs = append(probs, err)
		}
	}
	if len(probs) == 0 {
		d.health.SetDropIn("")
		return
	}
	d.health.SetDropIn(errors.Join(probs...).Error())
}

// executable is the binary this process runs, links resolved: the path the installer writes
// into the drop-in.
func executable() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if found, err := filepath.EvalSymlinks(exe); err == nil {
		return found
	}
	return exe
}
