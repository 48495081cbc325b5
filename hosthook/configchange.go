package hosthook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/allowlist"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// answerConfigChange judges a settings file the CLI is about to reload (the lockdown drop-in's
// ConfigChange hook): a change that adds anything able to start a program, rewrite a call or
// switch hooks off is recorded, and in enforce blocked and taken out of the file (the original
// kept beside it): blocking alone stops the reload only in the running session, and the next
// session would load the file as it stands. Managed changes cannot be blocked and are not judged.
func answerConfigChange(data []byte, cfg managedconfig.Config, session string, now func() time.Time, stamp telemetry.Stamp, record recorder) []byte {
	started := now()
	enforce := cfg.Mode == managedconfig.Enforce
	c, err := claudehook.ParseConfigChange(data)
	if err != nil {
		return blockChange(enforce, "coworkbridge cannot read this settings change: "+err.Error())
	}
	if c.Source == claudehook.SourcePolicy {
		return nil
	}
	held, attempts, why := judgeSettingsFile(c.FilePath, allowlist.New(cfg.AllowedSettings))
	input := map[string]any{"source": c.Source, "file_path": c.FilePath}
	var rule, reason string
	switch {
	case why != "":
		rule, reason = ruleid.SettingsUnreadable, why
	case len(attempts) > 0:
		input["held"] = held
		rule, reason = ruleid.SettingsChange, "the change adds what can start a program or switch hooks off: "+strings.Join(attempts, ", ")
	default:
		return nil // nothing able to run code; keys the safe list does not know are the daemon's to hold
	}
	if enforce && len(attempts) > 0 {
		// Blocking stops the reload in this session only: the file keeps the change and the
		// next session would load it. Take the attempt out of the file itself, original aside.
		if aside, err := holdInFile(c.FilePath, allowlist.New(cfg.AllowedSettings), now()); err != nil {
			input["hold_failed"] = err.Error()
		} else if aside != "" {
			input["original_kept_as"] = aside
		}
	}
	in, _ := json.Marshal(input)
	record(judgement.SettingsChange(now(), session, newRID(), cfg.Mode, c, in, rule, reason, now().Sub(started)), stamp)
	return blockChange(enforce, "coworkbridge: "+reason+" (allowed only when managed.json's allowed_settings names it)")
}

// maxSettingsFile bounds what a ConfigChange reads; Claude Code's own files are kilobytes.
const maxSettingsFile = 4 << 20

// judgeSettingsFile reads the changed file (never through a link: the CLI reads settings files
// directly, and a link is the agent's way of pointing elsewhere) and names what it would hold.
// why is set when the file cannot be judged.
func judgeSettingsFile(path string, l allowlist.List) (held, attempts []string, why string) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, "" // a removal adds nothing
	case err != nil:
		return nil, nil, "cannot examine the changed settings file: " + err.Error()
	case !fi.Mode().IsRegular():
		return nil, nil, "the changed settings file is not a plain file (" + fi.Mode().Type().String() + ")"
	case fi.Size() > maxSettingsFile:
		return nil, nil, "the changed settings file is larger than coworkbridge reads"
	}
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow|oNonBlock, 0)
	if err != nil {
		return nil, nil, "cannot read the changed settings file: " + err.Error()
	}
	defer f.Close()
	buf := make([]byte, maxSettingsFile+1)
	n, _ := readFull(f, buf)
	held, attempts, err = hookentry.Judge(buf[:n], l)
	if err != nil {
		return nil, nil, "" // the CLI ignores a settings file it cannot parse
	}
	return held, attempts, ""
}

// holdInFile rewrites the settings file at path without what only an attempt explains (every
// other key stays: the file may be a user's own), after keeping the original beside it under a
// name the CLI reads no settings from. It returns that name, "" when nothing was taken out. Only
// a plain settings*.json file in a .claude folder is ever written, never through a link.
func holdInFile(path string, l allowlist.List, now time.Time) (string, error) {
	base := filepath.Base(path)
	if filepath.Base(filepath.Dir(path)) != ".claude" || !strings.HasPrefix(base, "settings") || filepath.Ext(base) != ".json" {
		return "", fmt.Errorf("not a settings file of a .claude folder: %s", path)
	}
	root, err := os.OpenRoot(filepath.Dir(path) + string(filepath.Separator) + ".") // a folder only: never a FIFO's blocking open
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, err := root.OpenFile(base, os.O_RDONLY|oNoFollow|oNonBlock, 0)
	if err != nil {
		return "", err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxSettingsFile {
		f.Close()
		return "", fmt.Errorf("%s is not a plain settings file coworkbridge reads", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSettingsFile))
	f.Close()
	if err != nil {
		return "", err
	}
	kept, _, err := hookentry.WithoutAttempts(data, l)
	if err != nil || kept == nil {
		return "", err
	}
	aside := base + ".held-" + now.UTC().Format("20060102T150405.000Z")
	if err := root.WriteFile(aside, data, 0o600); err != nil {
		return "", fmt.Errorf("keep the original aside: %w", err)
	}
	tmp := base + ".coworkbridge-tmp"
	if err := root.WriteFile(tmp, kept, fi.Mode().Perm()); err != nil {
		return "", err
	}
	if err := root.Rename(tmp, base); err != nil {
		root.Remove(tmp)
		return "", err
	}
	return filepath.Join(filepath.Dir(path), aside), nil
}

// blockChange is the answer to a settings change that must not load: a block in enforce mode,
// nothing otherwise.
func blockChange(enforce bool, reason string) []byte {
	if !enforce {
		return nil
	}
	return claudehook.BlockChange(reason)
}
