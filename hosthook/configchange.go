package hosthook

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/allowlist"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/injector"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// Rule ids of the ConfigChange judgement, as the decision log names them.
const (
	ruleSettingsChange     = "coworkbridge.settings-change"
	ruleSettingsUnreadable = "coworkbridge.settings-unreadable"
)

// answerConfigChange judges a settings file the CLI is about to reload (the lockdown drop-in's
// ConfigChange hook): a change that adds anything able to start a program, rewrite a call or
// switch hooks off is recorded, and in enforce blocked. Blocking stops the reload only in the
// running session (the file keeps the change), so the daemon's repair of the file stays the
// other half of this defence. Managed changes cannot be blocked and are not judged.
func answerConfigChange(data []byte, cfg managedconfig.Config, session string, now func() time.Time, stamp telemetry.Stamp) []byte {
	started := now()
	enforce := cfg.Mode == managedconfig.Enforce
	c, err := claudehook.ParseConfigChange(data)
	if err != nil {
		return blockChange(enforce, "coworkbridge cannot read this settings change: "+err.Error())
	}
	if c.Source == claudehook.SourcePolicy {
		return nil
	}
	rec := telemetry.Record{TS: now(), RID: newRID(), Session: session, Agent: "claude-code",
		Transport: telemetry.TransportHook, Mode: string(cfg.Mode), Tool: claudehook.EventConfigChange, Cwd: c.Cwd}
	if rec.Session == "" {
		rec.Session = c.SessionID
	}
	held, attempts, why := judgeSettingsFile(c.FilePath, allowlist.New(cfg.AllowedSettings))
	input := map[string]any{"source": c.Source, "file_path": c.FilePath}
	switch {
	case why != "":
		rec.Decision, rec.Rule, rec.Reason = claudehook.Deny, ruleSettingsUnreadable, why
	case len(attempts) > 0:
		input["held"] = held
		rec.Decision, rec.Rule = claudehook.Deny, ruleSettingsChange
		rec.Reason = "the change adds what can start a program or switch hooks off: " + strings.Join(attempts, ", ")
	default:
		return nil // nothing able to run code; keys the safe list does not know are the daemon's to hold
	}
	rec.Input, _ = json.Marshal(input)
	rec.Enforced = enforce
	rec.LatencyUS = now().Sub(started).Microseconds()
	record(rec, cfg.Telemetry, stamp)
	return blockChange(enforce, "coworkbridge: "+rec.Reason+" (allowed only when managed.json's allowed_settings names it)")
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
	held, attempts, err = injector.Judge(buf[:n], l)
	if err != nil {
		return nil, nil, "" // the CLI ignores a settings file it cannot parse
	}
	return held, attempts, ""
}

// blockChange is the answer to a settings change that must not load: a block in enforce mode,
// nothing otherwise.
func blockChange(enforce bool, reason string) []byte {
	if !enforce {
		return nil
	}
	return claudehook.BlockChange(reason)
}
