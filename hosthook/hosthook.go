// Package hosthook is the decision of `coworkbridge hook`, the ordinary Claude Code PreToolUse hook
// for sessions that run on the Mac itself (registered by the managed-settings drop-in). For each
// call it reads the payload, compiles the managed policy, judges the call, records it in the
// decision log, and returns what the hook prints: a deny or ask in enforce mode, nothing otherwise.
//
// It is also the system daemon's socket door (Callers): the same judgement for a call handed over
// the socket, under the policy of the caller the kernel names.
//
// It never fails open in enforce mode: every failure, a panic included, is a deny. It does not
// answer Cowork sessions whose own injected hook reports to the daemon (the daemon does), it never
// writes the last good copy of managed.json (only the daemon does), and it keeps no state between
// calls.
package hosthook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/flow"
	"github.com/coworkbridge/coworkbridge/internal/realpath"
	"github.com/coworkbridge/coworkbridge/internal/runfile"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/spool"
	"github.com/coworkbridge/coworkbridge/telemetry"
	"github.com/coworkbridge/coworkbridge/transcript"
)

// maxPayload bounds what the hook reads from stdin when no config says otherwise.
const maxPayload = 16 << 20

// Options are what one call needs besides its payload.
type Options struct {
	// Env is the user's environment; nil: managed.SystemEnv. Its Getenv also gives Claude Code's
	// CLAUDE_CONFIG_DIR and CLAUDE_CODE_HOST_SESSION_ID.
	Env func() (managedconfig.Env, error)
	// DevOverrides lets the COWORKBRIDGE_* overrides count (a development build, the tests' own
	// binary). Otherwise they are ignored: the hook's environment is partly the session's to
	// choose (settings env), and an override could point it at a policy of the agent's making.
	DevOverrides bool
	// Version is this build's, for the decision log.
	Version string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// AskDaemon hands a call to the system-mode daemon listening at socket and returns its
	// answer (AnswerSystem; cmd/coworkbridge gives it over package hostsocket). It is a function
	// here so that the per-user hook, a process started on every tool call, links no network
	// code. nil: the daemon cannot be reached.
	AskDaemon func(socket string, r Request, deadline time.Time) (DaemonAnswer, error)
}

// Request is a host call as the system-mode daemon takes it: the hook's payload, and the two
// variables of the caller's environment that name its session.
type Request struct {
	Payload     []byte
	ConfigDir   string // CLAUDE_CONFIG_DIR
	HostSession string // CLAUDE_CODE_HOST_SESSION_ID
}

// DaemonAnswer is the system-mode daemon's answer to a Request: coworkbridge is off, or what
// the hook prints.
type DaemonAnswer struct {
	Off    bool
	Output []byte
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Env == nil {
		o.Env = managedconfig.SystemEnv
	}
	return o
}

// env is the user's environment, without the development overrides unless they count.
func (o Options) env() (managedconfig.Env, error) {
	env, err := o.Env()
	if err == nil && !o.DevOverrides {
		env = env.WithoutOverrides()
	}
	return env, err
}

// Answer judges the call whose payload is in and returns what the hook prints (nothing for no
// objection). In enforce mode every failure, a panic included, is a deny; in observe mode nothing
// is ever printed.
func Answer(in io.Reader, opts Options) (out []byte) {
	opts = opts.withDefaults()
	started := opts.Now()
	enforce := false
	var notices managedconfig.Notices // the organisation's, once the configuration is read
	defer func() {
		if r := recover(); r != nil {
			out = failureWith(enforce, fmt.Sprintf("internal error (%v)", r), notices)
		}
	}()
	env, err := opts.env()
	if err != nil {
		return failure(true, "cannot find the user's home: "+err.Error())
	}
	paths, err := env.Paths()
	if err != nil {
		return failure(true, "cannot find coworkbridge's folders: "+err.Error())
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
	notices = cfg.Policy.Notices
	data, why := readInput(in, cfg.MaxLineBytes)
	if why != "" {
		return failureWith(enforce, why, notices)
	}
	stamp := telemetry.LocalStamp(opts.Version, snap.ShortHash(), string(snap.Origin))
	if claudehook.IsConfigChange(data) {
		return answerConfigChange(data, cfg, hostSession(env, claudehook.Payload{}), opts.Now, stamp, local(cfg.Telemetry, paths))
	}
	// Under lockdown the session's own hook is a user hook the CLI does not run: this hook is the
	// guard of every call. Without it, a Cowork session whose settings carry exactly our current
	// entry reports to the daemon, and is not recorded twice.
	if !cfg.Lockdown && guardedBySessionHook(getenv(env, "CLAUDE_CONFIG_DIR"), cfg, paths.ChannelRoot()) {
		standAside(env, cfg, paths.ChannelRoot(), data)
		return nil
	}
	cls, err := classifierFor(snap)
	if err != nil && cls == nil {
		return failureWith(enforce, "the policy in managed.json cannot be used (config_invalid): "+err.Error(), notices)
	}
	j := Judgement{Judge: judgeFor(cfg, cls, opts.Now, cmp.Or(getenv(env, "HOME"), env.Home)), Env: env, ChannelRoot: paths.ChannelRoot(), Stamp: stamp,
		Door: judgement.Hook, FlowNote: func(dir string) ([]byte, error) { return readFlowNote(paths.OffsetsFile(), dir) }}
	rec, out := j.Decide(context.Background(), data, started)
	if rec != nil {
		local(cfg.Telemetry, paths)(*rec, stamp)
	}
	return out
}

// Judgement is what judging a PreToolUse call needs besides the call: the hook's own (user
// mode), or a system-mode daemon's for one caller.
type Judgement struct {
	Judge judgement.Judge
	// Env is the caller's: its home, and through Getenv its CLAUDE_CONFIG_DIR and
	// CLAUDE_CODE_HOST_SESSION_ID.
	Env managedconfig.Env
	// ChannelRoot holds the sessions' host channels (quarantines, receipts); "" for none.
	ChannelRoot string
	Stamp       telemetry.Stamp
	// Door is how the call came: the hook's own process, or the system daemon's socket (whose
	// records name the caller as the kernel does, in Stamp.User).
	Door judgement.Door
	// View, when set, is asked once per call what the caller's own worker sees of it (system
	// mode): where the Mac's links take its paths, in place of the judge's Links, and the state
	// of its session (session "": none), standing in for the host channel.
	View func(p claudehook.Payload, session string) View
	// FlowNote, when set (a hook of its own, per-user mode), reads the session folder's flow as
	// the daemon keeps it (flow.NoteKey in its offsets store).
	FlowNote func(sessionDir string) ([]byte, error)
	// Note is added to the record's reason: how the call was judged, when not the usual way.
	Note string
}

// View is what a system-mode daemon learns of a host call from the caller's worker, in one
// question: two cost the daemon and the worker a round trip each, on every call.
type View struct {
	// Resolved is where the call's links lead, as the user; ResolveErr says why it is not known
	// (the call is then judged as written, and its record says why).
	Resolved   *judgement.Resolution
	ResolveErr error
	// Session is the state of the call's session; Tracked is false for one the worker does not
	// follow (or when none was asked about).
	Session SessionState
	Tracked bool
}

// SessionState is what a system-mode daemon knows of a session a host call comes from: its
// quarantine and flow, and where a call's receipt goes (in memory).
type SessionState struct {
	Quarantined string
	Flow        flow.State
	Judged      func(claudehook.Receipt)
}

// judgeFor is the judgement of the policy cls for a hook on this Mac: its paths also judged
// where the Mac's links take them, the protected places known by identity.
// home is the user's, where the secret folders the read rules name are.
func judgeFor(cfg managedconfig.Config, cls *classifier.Classifier, now func() time.Time, home string) judgement.Judge {
	return judgement.Judge{Cfg: cfg, Rules: cls, Links: filepath.EvalSymlinks, Now: now,
		Places: func() realpath.Identities {
			ids := realpath.Of(cls.PlacePaths())
			if home == "" {
				return ids
			}
			return ids.WithSecrets(func() []string { return realpath.InHome(cls.SecretFolders(), home) })
		}}
}

// Decide judges the call whose payload is data and returns its record (nil when there is none to
// write) and what the hook prints. A payload it cannot read is a failure answer, as the hook's.
func (j Judgement) Decide(ctx context.Context, data []byte, started time.Time) (*telemetry.Record, []byte) {
	cfg := j.Judge.Cfg
	p, err := claudehook.ParsePayload(data)
	if err != nil {
		return nil, failureWith(cfg.Mode == managedconfig.Enforce, "cannot read the tool call: "+err.Error(), cfg.Policy.Notices)
	}
	c := judgement.Call{Door: j.Door, Payload: p, RID: newRID(), Session: hostSession(j.Env, p), Waiting: true,
		Own: ownSessionOf(j.Env, cfg), User: j.Stamp.User, Host: j.Stamp.Host, RecordUser: j.Door == judgement.Socket, Note: j.Note, Started: started}
	receipt := func(claudehook.Receipt) {}
	place, inSession := sessionOfConfigDir(getenv(j.Env, "CLAUDE_CONFIG_DIR"), cfg.SessionsRoots)
	switch {
	case j.View != nil:
		id := ""
		if inSession {
			id = place.ID()
		}
		v := j.View(p, id)
		if v.ResolveErr != nil {
			c.Note = joinNote(c.Note, "judged as written: where its links lead could not be worked out as the user ("+v.ResolveErr.Error()+")")
		}
		c.Resolved = v.Resolved
		if v.Tracked && inSession {
			c.Quarantined, c.Flow = v.Session.Quarantined, v.Session.Flow
			if v.Session.Judged != nil {
				receipt = v.Session.Judged
			}
		}
	default:
		if ch := channel(j.Env, cfg, j.ChannelRoot); ch != nil {
			defer ch.Close()
			c.Quarantined = quarantined(ch, j.Judge.Now())
			receipt = func(r claudehook.Receipt) { leaveReceipt(ch, r) }
		}
		if inSession && j.FlowNote != nil {
			var note []byte
			if note, c.FlowErr = j.FlowNote(place.Dir); c.FlowErr == nil {
				c.Flow = flow.Restore(note)
				c.Learn = learnPending(p.TranscriptPath)
			}
		}
	}
	if j.Door == judgement.Hook { // this process is the user's: it reads what the call runs
		r := runfile.Reader{Home: getenv(j.Env, "HOME"), VM: c.InVM()}
		if inSession && r.VM {
			r.Session = place.Dir
		}
		c.Read = r.Read
		if !c.InVM() && j.Judge.Links != nil {
			// A shell on the Mac follows the Mac's links: the paths its command names are
			// judged where they lead too.
			c.Where = realpath.Where(cmp.Or(getenv(j.Env, "HOME"), j.Env.Home), j.Judge.Links, j.Judge.Places)
		}
	}
	o := j.Judge.Decide(ctx, c)
	if o.Receipt.ToolUseID != "" {
		receipt(o.Receipt)
	}
	return &o.Record, o.Output()
}

// readInput reads one payload of at most the configured line size (or maxPayload, if larger);
// why says what went wrong.
func readInput(in io.Reader, maxLine int64) (data []byte, why string) {
	limit := max(maxLine, maxPayload)
	data, err := io.ReadAll(io.LimitReader(in, limit+1))
	if err != nil {
		return nil, "cannot read the tool call: " + err.Error()
	}
	if int64(len(data)) > limit {
		return nil, "the tool call is larger than coworkbridge accepts"
	}
	return bytes.TrimSpace(data), ""
}

// classifierFor is the policy in force, or with a broken file and no good copy a policy that
// denies every call naming the problem.
func classifierFor(snap managedconfig.Snapshot) (*classifier.Classifier, error) {
	if snap.Origin != managedconfig.OriginInvalid {
		return policy.Compile(snap.Config.Policy)
	}
	return policy.DenyAll()
}

// recorder writes one record where this process may: the decision log itself (user mode), or
// the drop folder for the daemon to import.
type recorder func(rec telemetry.Record, stamp telemetry.Stamp)

// local appends to the decision log; a record it cannot write there (the lock held past the
// wait, the disk full, a rotation due, which is the daemon's to make) goes to the drop folder,
// where the daemon imports it. A failure does not
// change the verdict: refusing every call on a full disk would stop all work without making
// anything safer.
func local(t managedconfig.Telemetry, paths managedconfig.Paths) recorder {
	return func(rec telemetry.Record, stamp telemetry.Stamp) {
		log := telemetry.Open(telemetry.Options{Path: t.Path, MaxFileBytes: int64(t.MaxFileMB) << 20,
			MaxFiles: t.MaxFiles, Redact: t.Redact, Inputs: t.Inputs, Stamp: stamp, NoRotate: true})
		defer log.Close()
		if err := log.Write(rec); err != nil {
			drop(paths.DropDir, rec, stamp)
		}
	}
}

// drop leaves rec in dir for the daemon to import, stamped as the log would stamp it.
func drop(dir string, rec telemetry.Record, stamp telemetry.Stamp) {
	rec.Version, rec.ConfigHash, rec.ConfigOrigin = stamp.Version, stamp.ConfigHash, stamp.ConfigOrigin
	if err := os.MkdirAll(dir, 0o700); err == nil {
		_ = telemetry.Drop(dir, rec)
	}
}

// failure is the answer when the hook cannot judge: a deny in enforce mode, nothing otherwise.
func failure(enforce bool, why string) []byte {
	return failureWith(enforce, why, managedconfig.Notices{})
}

// failureWith is failure with the organisation's notice around the reason, as on every deny.
func failureWith(enforce bool, why string, n managedconfig.Notices) []byte {
	if !enforce {
		return nil
	}
	reason := n.Explain("coworkbridge: this tool call was blocked because "+why,
		managedconfig.NoticeFacts{Rule: ruleid.Hook, Decision: string(claudehook.Deny)})
	return claudehook.Output(claudehook.Deny, reason, "")
}

// newRID gives a host-hook record a request id like the spool's, so that every record has one.
func newRID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hostSession names the session in the decision log: Cowork's host session id when there is
// one, else Claude Code's own session id.
func hostSession(env managedconfig.Env, p claudehook.Payload) string {
	if id := getenv(env, "CLAUDE_CODE_HOST_SESSION_ID"); id != "" {
		return id
	}
	return p.SessionID
}

func getenv(env managedconfig.Env, key string) string {
	if env.Getenv == nil {
		return ""
	}
	return env.Getenv(key)
}

// learnPending is a judgement's Learn (see judgement.Call) in the user's own hook: it reads the
// end of the transcript the CLI names until the latest private read's result is there, for at
// most learnWait (the CLI writes it while this hook runs; the daemon, which notes it in the
// flow, reads transcripts within a second). This process is the user's, and the transcript the
// CLI's, on the Mac.
func learnPending(transcriptPath string) func(flow.State) flow.State {
	return func(st flow.State) flow.State {
		if transcriptPath == "" {
			return st
		}
		deadline := time.Now().Add(learnWait)
		for tries := 1; ; tries++ {
			text, found, err := transcript.ResultIn(transcriptPath, st.Private.Call, pendingTail)
			if found {
				st.Learn(st.Private.Call, text)
				return st
			}
			if err != nil || !time.Now().Before(deadline) || tries > int(learnWait/learnPoll) {
				return st
			}
			time.Sleep(learnPoll)
		}
	}
}

// pendingTail is how much of a transcript's end learnPending reads: the read's result is among
// the last lines, since the call being judged was made right after it.
const pendingTail = 512 << 10

// learnWait and learnPoll: see the lane's, which these follow.
const learnWait, learnPoll = time.Second, 20 * time.Millisecond

// readFlowNote reads a session's flow from the daemon's offsets store (read only: the daemon
// writes it).
func readFlowNote(offsets, sessionDir string) ([]byte, error) {
	st, err := spool.OpenStore(offsets)
	if err != nil {
		return nil, fmt.Errorf("read the daemon's state: %w", err)
	}
	return st.Note(flow.NoteKey(sessionDir)), nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
