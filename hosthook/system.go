package hosthook

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// SystemWait bounds how long a system-mode hook waits for the daemon's answer: the daemon
// answers in milliseconds, and the drop-in gives the hook 30 s before the CLI blocks the call.
const SystemWait = 10 * time.Second

// AnswerSystem is Answer in system mode, where a root daemon judges and records: the call goes
// to the daemon over its socket and the daemon's answer is printed. The hook reads no policy
// then. Only when the daemon cannot be reached does it read managed.json: off, nothing; enforce,
// a deny with the organisation's notice; observe, the call judged here and its record dropped in
// the daemon's drop folder, where the kernel's owner of the file, not the file, names the user.
func AnswerSystem(in io.Reader, opts Options) (out []byte) {
	opts = opts.withDefaults()
	started := opts.Now()
	defer func() {
		if r := recover(); r != nil {
			out = failure(true, fmt.Sprintf("internal error (%v)", r))
		}
	}()
	env, err := opts.env()
	if err != nil {
		return failure(true, "cannot find the user's home: "+err.Error())
	}
	sys := env
	sys.System = true
	system, err := sys.Paths()
	if err != nil {
		return failure(true, "cannot find coworkbridge's socket: "+err.Error())
	}
	data, why := readInput(in, 0)
	if why != "" {
		return alone(env, system, opts, started, nil, why)
	}
	if claudehook.IsConfigChange(data) {
		// The settings file is the user's to rewrite, so this runs as the user, here.
		return alone(env, system, opts, started, data, "")
	}
	if opts.AskDaemon == nil {
		return alone(env, system, opts, started, data, "this program cannot reach the daemon")
	}
	a, err := opts.AskDaemon(system.Socket, Request{Payload: data,
		ConfigDir: getenv(env, "CLAUDE_CONFIG_DIR"), HostSession: getenv(env, "CLAUDE_CODE_HOST_SESSION_ID")},
		started.Add(SystemWait))
	if err == nil {
		if a.Off {
			return nil
		}
		return a.Output
	}
	return alone(env, system, opts, started, data, err.Error())
}

// alone answers without the daemon: a ConfigChange (why empty), or a call the daemon could not
// take (why says what failed). It reads managed.json as the user mode hook does; records go to
// the system drop folder.
func alone(env managedconfig.Env, system managedconfig.Paths, opts Options, started time.Time, data []byte, why string) []byte {
	paths, err := env.Paths()
	if err != nil {
		return failure(true, "cannot find coworkbridge's folders: "+err.Error())
	}
	snap := managedconfig.NewLoader(env, paths).Load()
	switch {
	case snap.Origin == managedconfig.OriginNone && why != "":
		// Installed in system mode, yet no managed.json: the daemon (which would say "off") is
		// unreachable, so the hook cannot know coworkbridge is off and does not assume it.
		return failureWith(true, "coworkbridge's daemon could not judge it ("+why+") and there is no managed.json to say the organisation's mode", managedconfig.Notices{})
	case snap.Origin == managedconfig.OriginInvalid:
		snap.Config.CoworkEnabled, snap.Config.Mode = true, snap.Intent
	case !snap.Enabled():
		return nil
	}
	cfg := snap.Config
	enforce := cfg.Mode == managedconfig.Enforce
	if why != "" && (snap.Origin == managedconfig.OriginInvalid && snap.Unread) {
		// The system drop-in is installed, so coworkbridge is deployed here; a managed.json this
		// user cannot read (root's alone, say) tells nothing of its mode, and "off" is not ours to
		// assume while the daemon that could read it is unreachable.
		return failureWith(true, "coworkbridge's daemon could not judge it ("+why+") and this user cannot read managed.json to know the organisation's mode ("+snap.Problem.Error()+")", cfg.Policy.Notices)
	}
	dropped := func(rec telemetry.Record, stamp telemetry.Stamp) { drop(system.DropDir, rec, stamp) }
	stamp := telemetry.LocalStamp(opts.Version, snap.ShortHash(), string(snap.Origin))
	if why == "" {
		return answerConfigChange(data, cfg, hostSession(env, claudehook.Payload{}), opts.Now, stamp, dropped)
	}
	if data == nil || enforce {
		return failureWith(enforce, "coworkbridge's daemon could not judge it ("+why+")", cfg.Policy.Notices)
	}
	cls, err := classifierFor(snap)
	if err != nil && cls == nil {
		return nil // observe: nothing to block, and nothing judged to record
	}
	j := Judgement{Judge: judgeFor(cfg, cls, opts.Now, cmp.Or(getenv(env, "HOME"), env.Home)), Env: env, Stamp: stamp, Door: judgement.Hook, Note: "judged by the hook alone: " + why}
	rec, out := j.Decide(context.Background(), data, started)
	if rec != nil {
		dropped(*rec, stamp)
	}
	return out
}
