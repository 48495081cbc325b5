package collector

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
	"github.com/coworkbridge/coworkbridge/telemetry"
	"github.com/coworkbridge/coworkbridge/transcript"
)

// Reconciliation catches the bypasses nobody has thought of: the CLI's transcript records every
// tool call that ran, and each one must have reached the daemon first (the hook runs before the
// tool) and must not have been denied. A call that ran with no event, or ran although its deny
// was enforced, is an unguarded call: recorded with the transcript's input, reported, and in
// enforce the session is quarantined. Only results the CLI did not mark as errors count as
// proof that a call ran: a refusal is an error result, and so is a tool that ran and failed, and
// the two cannot be told apart.
//
// The transcript is the agent's to edit, so this is detection, not proof: an agent that rewrites
// it can hide a call from it (see THREATS.md).

// RuleUnguarded is the rule of the record left by an unguarded call.
const RuleUnguarded = "coworkbridge.unguarded-call"

const (
	// reconcileEvery bounds how often event drains also read the transcript.
	reconcileEvery = time.Second
	// transcriptMaxLine bounds one transcript line read (they hold whole file contents).
	transcriptMaxLine = 16 << 20
	// Bounds on what is remembered per session.
	maxJudged, maxUses, maxTranscripts = 20000, 2000, 200
	judgedKeep                         = time.Hour
)

// reconciler is one session's reconciliation state; it belongs to the session's worker.
type reconciler struct {
	since   time.Time // transcripts untouched since before this are read from their end
	last    time.Time // the last reconciliation
	pos     map[string]spool.Position
	partial map[string]spool.Partial
	judged  map[string]judgedCall // by tool_use_id, from the events judged
	uses    map[string]use        // calls seen in the transcript, awaiting a result
	pending map[string]time.Time  // results that ran with no event yet, since when
	// versions are the Claude Code versions health has been told of, so that it hears of each
	// once rather than at every line.
	versions []string
}

type judgedCall struct {
	denied bool // an enforced deny
	at     time.Time
	input  transcript.Fingerprint
}

// use is what is kept of a call the transcript shows, until its result: never its whole input,
// which can hold a whole file (a session writing huge inputs must not grow the daemon).
type use struct {
	id, tool string
	preview  json.RawMessage // transcript.Preview of the input
	input    transcript.Fingerprint
}

// maxVersions bounds the versions one session reports: lines the agent writes can name any.
const maxVersions = 8

func newReconciler(now time.Time) *reconciler {
	return &reconciler{since: now, pos: map[string]spool.Position{}, partial: map[string]spool.Partial{},
		judged: map[string]judgedCall{}, uses: map[string]use{}, pending: map[string]time.Time{}}
}

// noteJudged records that the event of a tool call reached the daemon and how it was decided.
func (r *reconciler) noteJudged(toolUseID string, denied bool, input json.RawMessage, now time.Time) {
	if toolUseID == "" || len(toolUseID) > 128 {
		return
	}
	if len(r.judged) >= maxJudged {
		for id, j := range r.judged {
			if now.Sub(j.at) > judgedKeep || len(r.judged) >= maxJudged {
				delete(r.judged, id)
			}
		}
	}
	r.judged[toolUseID] = judgedCall{denied: denied, at: now, input: transcript.FingerprintOf(input)}
}

// unguarded is one call found to have run without the guard.
type unguarded struct {
	use use
	why string
}

// reconcile reads what the session's transcripts added and reports unguarded calls. force skips
// the rate limit (housekeeping passes).
func (c *Collector) reconcile(s *session.Session, t *tracked, p *policy, force bool) {
	r := t.recon
	now := c.opts.Now()
	if !force && now.Sub(r.last) < reconcileEvery && len(r.pending) == 0 {
		return
	}
	r.last = now
	var found []unguarded
	for _, name := range transcripts(s) {
		found = append(found, c.readTranscript(s, r, name, now)...)
	}
	for id, since := range r.pending {
		j, ok := r.judged[id]
		switch {
		case ok && j.denied:
			found = append(found, unguarded{r.takeUse(id), "it ran although coworkbridge denied it (the hook was killed, or its answer forged)"})
		case ok:
		case now.Sub(since) < c.opts.ReconcileGrace:
			continue
		default:
			found = append(found, unguarded{r.takeUse(id), "it ran but its hook never reached coworkbridge (hooks switched off, or the hook bypassed)"})
		}
		delete(r.pending, id)
	}
	if len(r.pending) > 0 {
		// Events are drained before the transcript is read, so only one still on its way needs
		// the grace; look again once it has passed.
		time.AfterFunc(c.opts.ReconcileGrace, func() { c.schedule(t, false) })
	}
	if len(found) > 0 {
		c.reportUnguarded(t, p, found, now)
	}
}

// readTranscript reads the new lines of one transcript.
func (c *Collector) readTranscript(s *session.Session, r *reconciler, name string, now time.Time) []unguarded {
	f, err := s.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil // gone, or a link or a FIFO: nothing the CLI wrote
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	pos, known := r.pos[name]
	if !known {
		if len(r.pos) >= maxTranscripts {
			return nil
		}
		if fi.ModTime().Before(r.since) {
			// Written before we followed this session: its calls are not ours to judge now.
			id, _ := spool.IdentityOf(fi)
			pos = spool.Position{ID: id, Offset: fi.Size()}
		}
	}
	rd, _, err := spool.NewReader(f, pos, transcriptMaxLine)
	if err != nil {
		return nil
	}
	rd.Resume(r.partial[name])
	var found []unguarded
	for {
		l, err := rd.Next()
		if errors.Is(err, io.EOF) || err != nil {
			break
		}
		if l.Oversized {
			continue
		}
		items, version := transcript.ParseLine(l.Data)
		if version != "" && !slices.Contains(r.versions, version) && len(r.versions) < maxVersions {
			r.versions = append(r.versions, version)
			c.opts.Health.CLIVersion(s.ID(), version)
		}
		for _, it := range items {
			found = append(found, r.take(it, now)...)
		}
	}
	r.pos[name] = rd.Position()
	r.partial[name] = rd.Partial()
	return found
}

// take handles one transcript item.
func (r *reconciler) take(it transcript.Item, now time.Time) []unguarded {
	switch it.Kind {
	case transcript.Use:
		if len(r.uses) >= maxUses {
			for id := range r.uses { // forget an arbitrary one: a call whose result never came
				delete(r.uses, id)
				break
			}
		}
		r.uses[it.ToolUseID] = use{id: it.ToolUseID, tool: it.Tool, preview: transcript.Preview(it.Input), input: transcript.FingerprintOf(it.Input)}
	case transcript.Result:
		if it.IsError {
			delete(r.uses, it.ToolUseID)
			return nil
		}
		j, ok := r.judged[it.ToolUseID]
		u, seen := r.uses[it.ToolUseID]
		switch {
		case ok && j.denied:
			return []unguarded{{r.takeUse(it.ToolUseID), "it ran although coworkbridge denied it (the hook was killed, or its answer forged)"}}
		case ok && seen && !transcript.Same(j.input, u.input):
			return []unguarded{{r.takeUse(it.ToolUseID), "it ran with an input other than the one coworkbridge judged (an event forged with its id, or the input rewritten after the judgement)"}}
		case ok:
			delete(r.uses, it.ToolUseID)
			return nil
		}
		if _, ok := r.pending[it.ToolUseID]; !ok {
			r.pending[it.ToolUseID] = now
		}
	}
	return nil
}

// takeUse returns and forgets the call of a tool-use id (with only its id when unseen).
func (r *reconciler) takeUse(id string) use {
	u, ok := r.uses[id]
	delete(r.uses, id)
	if !ok {
		u = use{id: id}
	}
	return u
}

// transcripts lists the session's transcript files: .claude/projects/<slug>/<id>.jsonl.
func transcripts(s *session.Session) []string {
	const projects = session.ClaudeDir + "/projects"
	dirs, err := s.ReadDir(projects, maxTranscripts)
	if err != nil && len(dirs) == 0 {
		return nil
	}
	var names []string
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		files, err := s.ReadDir(projects+"/"+d.Name(), maxTranscripts)
		if err != nil && (len(files) == 0 || errors.Is(err, fs.ErrNotExist)) {
			continue
		}
		for _, f := range files {
			if f.Type().IsRegular() && strings.HasSuffix(f.Name(), ".jsonl") && len(names) < maxTranscripts {
				names = append(names, projects+"/"+d.Name()+"/"+f.Name())
			}
		}
	}
	return names
}

// reportUnguarded records each unguarded call, tells health, and in enforce quarantines.
func (c *Collector) reportUnguarded(t *tracked, p *policy, found []unguarded, now time.Time) {
	recs := make([]telemetry.Record, 0, len(found))
	for _, u := range found {
		input := u.use.preview
		if len(input) == 0 {
			input = json.RawMessage("null")
		}
		recs = append(recs, telemetry.Record{TS: now, Session: t.id, Agent: "cowork", Transport: telemetry.TransportTranscript,
			Mode: string(p.cfg.Mode), Tool: u.use.tool, Input: input, Decision: claudehook.Deny, Rule: RuleUnguarded,
			Reason: "tool call " + u.use.id + ": " + u.why})
		c.log.Warn("a tool call ran without the guard", "code", health.CodeUnguardedCall, "session", t.id, "tool_use_id", u.use.id, "tool", u.use.tool, "why", u.why)
		c.opts.Health.UnguardedCall(t.id)
	}
	if err := c.opts.Sink.WriteBatch(recs); err != nil {
		c.opts.Health.TelemetryFailed()
		c.log.Warn("cannot record unguarded calls in the decision log", "code", health.CodeTelemetryFailed, "session", t.id, "err", err)
	}
	if p.cfg.Mode == managedconfig.Enforce {
		c.Quarantine(t.id, "a tool call ran without the guard ("+found[0].why+")")
	}
}
