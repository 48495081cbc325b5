package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/injector"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// maxHookPayload bounds what the host hook reads from stdin when no config says otherwise.
const maxHookPayload = 16 << 20

// cmdHook is an ordinary Claude Code PreToolUse command hook for sessions that run on the Mac
// itself. It always exits 0: Claude Code treats other exit codes as errors and lets the call
// through, so every refusal is a printed deny.
func cmdHook(_ context.Context, args []string, sio stdio) int {
	fs := newFlags("hook", "< PAYLOAD.json", "A Claude Code PreToolUse hook for sessions on this Mac: classifies the call with\n"+
		"the managed policy, records it, and prints a deny or ask (nothing for no objection).\n"+
		"`coworkbridge install --managed-settings` registers it for every Claude Code session.", sio)
	if code, done := fs.parse(args); done {
		return code
	}
	if code, done := fs.noArgs(); done {
		return code
	}
	out := hookVerdict(sio.in, time.Now, sio.devOverrides)
	if len(out) > 0 {
		sio.out.Write(out)
	}
	return exitOK
}

// hookVerdict does the hook's work and returns what to print. In enforce mode every failure,
// a panic included, is a deny; in observe mode nothing is ever printed.
//
// Unless devOverrides is set, the COWORKBRIDGE_* overrides are ignored: the hook's environment is
// partly the session's to choose (settings env), and an override could point it at a policy of
// the agent's making.
func hookVerdict(in io.Reader, now func() time.Time, devOverrides bool) (out []byte) {
	started := now()
	enforce := false
	defer func() {
		if r := recover(); r != nil {
			out = hookFailure(enforce, fmt.Sprintf("internal error (%v)", r))
		}
	}()
	env, err := managedconfig.SystemEnv()
	if err != nil {
		return hookFailure(true, "cannot find the user's home: "+err.Error())
	}
	if !devOverrides {
		env = env.WithoutOverrides()
	}
	paths, err := env.Paths()
	if err != nil {
		return hookFailure(true, "cannot find coworkbridge's folders: "+err.Error())
	}
	snap := managedconfig.NewLoader(env, paths).Load()
	if snap.Origin == managedconfig.OriginInvalid {
		// A broken file and no good copy: as the daemon does, fail closed when the file clearly
		// asks for enforce, block nothing otherwise, and say config_invalid either way.
		snap.Config.CoworkEnabled, snap.Config.Mode = true, snap.Intent
	} else if !snap.Enabled() {
		return nil // coworkbridge is off on this Mac
	}
	cfg := snap.Config
	enforce = cfg.Mode == managedconfig.Enforce
	data, err := io.ReadAll(io.LimitReader(in, max(cfg.MaxLineBytes, maxHookPayload)+1))
	if err != nil {
		return hookFailure(enforce, "cannot read the tool call: "+err.Error())
	}
	if int64(len(data)) > max(cfg.MaxLineBytes, maxHookPayload) {
		return hookFailure(enforce, "the tool call is larger than coworkbridge accepts")
	}
	p, err := claudehook.ParsePayload(bytes.TrimSpace(data))
	if err != nil {
		return hookFailure(enforce, "cannot read the tool call: "+err.Error())
	}
	if guardedBySessionHook(os.Getenv("CLAUDE_CONFIG_DIR"), cfg, paths.ChannelRoot()) {
		return nil // a Cowork session whose own hook reports to the daemon: one record per call
	}
	var cls *classifier.Classifier
	if snap.Origin == managedconfig.OriginInvalid {
		cls, err = classifier.New(classifier.Policy{DenyAll: "coworkbridge's configuration (managed.json) is invalid (config_invalid) " +
			"and no good copy exists, so no call can be checked: " + errString(snap.Problem) + ". Ask your IT team to fix it."})
	} else {
		cls, err = policy.Compile(cfg.Policy)
	}
	if err != nil && cls == nil {
		return hookFailure(enforce, "the policy in managed.json cannot be used (config_invalid): "+err.Error())
	}
	v := cls.Evaluate(context.Background(), p)
	log := telemetry.Open(telemetry.Options{Path: cfg.Telemetry.Path, MaxFileBytes: int64(cfg.Telemetry.MaxFileMB) << 20,
		MaxFiles: cfg.Telemetry.MaxFiles, Redact: cfg.Telemetry.Redact, Inputs: cfg.Telemetry.Inputs, Stamp: telemetry.LocalStamp(versionString(), snap.ShortHash(), string(snap.Origin))})
	defer log.Close()
	rec := telemetry.Record{TS: now(), RID: newRID(), Session: hostSession(p), Agent: "claude-code", Transport: telemetry.TransportHook,
		Mode: string(cfg.Mode), Enforced: enforce && !v.ObserveOnly, Tool: p.ToolName, Input: p.ToolInput, Cwd: p.Cwd,
		Decision: string(v.Decision), Rule: v.RuleID, Reason: v.Reason, LatencyUS: now().Sub(started).Microseconds()}
	if len(rec.Input) == 0 {
		rec.Input = json.RawMessage("null")
	}
	// A decision-log failure does not change the verdict: refusing every call on a full disk
	// would stop all work without making anything safer.
	_ = log.Write(rec)
	if !rec.Enforced {
		return nil
	}
	return claudehook.Output(v.Decision, v.HookReason(), v.Nudge)
}

// hookFailure is the answer when the hook cannot judge: a deny in enforce mode, nothing otherwise.
func hookFailure(enforce bool, why string) []byte {
	if !enforce {
		return nil
	}
	return claudehook.Output(claudehook.Deny, "coworkbridge: this tool call was blocked because "+why, "")
}

// newRID gives a host-hook record a request id like the spool's, so that every record has one.
func newRID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hostSession names the session in the decision log: Cowork's host session id when there is
// one, else Claude Code's own session id.
func hostSession(p claudehook.Payload) string {
	if id := os.Getenv("CLAUDE_CODE_HOST_SESSION_ID"); id != "" {
		return id
	}
	return p.SessionID
}

// guardedBySessionHook reports whether the call comes from a Cowork session whose own hook
// reports to the daemon, so that it is not recorded twice. CLAUDE_CONFIG_DIR is the session's to
// set (settings env), so it must name the .claude folder of a session under a configured sessions
// root, reached through real folders, whose settings carry exactly the entry the injector writes
// there now: a look-alike carrying our marker does not make the host hook stand aside.
func guardedBySessionHook(configDir string, cfg managedconfig.Config, stateDir string) bool {
	if configDir == "" || !filepath.IsAbs(configDir) {
		return false
	}
	configDir = filepath.Clean(configDir)
	sessionDir := filepath.Dir(configDir)
	if filepath.Base(configDir) != session.ClaudeDir || !strings.HasPrefix(filepath.Base(sessionDir), "local_") {
		return false
	}
	root := sessionsRootOf(sessionDir, cfg.SessionsRoots)
	if root == "" {
		return false
	}
	for p := filepath.Dir(sessionDir); p != root; p = filepath.Dir(p) {
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
			return false // a link or nothing on the way: not Cowork's tree
		}
	}
	s, err := session.Open(sessionDir)
	if err != nil {
		return false
	}
	defer s.Close()
	data, err := s.ReadFile(session.SettingsFile, 4<<20)
	if err != nil {
		return false
	}
	id := filepath.Base(sessionDir)
	e, err := injector.NewEntry(cfg, filepath.Join(session.ChannelDir(stateDir, id), filepath.FromSlash(session.BridgeDir)))
	return err == nil && injector.HookCommand(data) == e.Command
}

// sessionsRootOf returns the sessions root that holds a session folder at the layout's depth
// (<root>/<account>/<org>/local_<uuid>), "" when none does.
func sessionsRootOf(sessionDir string, roots []string) string {
	for _, r := range roots {
		rel, err := filepath.Rel(filepath.Clean(r), sessionDir)
		if err == nil && !strings.HasPrefix(rel, "..") && len(strings.Split(rel, string(filepath.Separator))) == 3 {
			return filepath.Clean(r)
		}
	}
	return ""
}
