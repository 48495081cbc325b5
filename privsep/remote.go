package privsep

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/collector"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/internal/realpath"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// askWait bounds a worker's wait for root's judgement: the classifier's budget and the trip.
// Past it the call is refused here, as a classifier that does not answer is.
const askWait = judgement.Budget + 3*time.Second

// identitiesFor is how long the protected places' identities are trusted (as the daemon's).
const identitiesFor = 10 * time.Second

// remoteRules is a worker's judgement: where the call's links lead is worked out here, as the
// user; the call itself is judged by root. A link down, or root failing, is a refusal.
type remoteRules struct {
	link *link
	now  func() time.Time
	mu   sync.Mutex
	cfg  managedconfig.Config
	// places are the protected places by identity, as the user sees them; home is the user's,
	// where the secret folders the read rules name are.
	places *realpath.Cache
	home   string
}

var _ collector.Rules = (*remoteRules)(nil)

func (r *remoteRules) set(s Setup) {
	pl := s.Places
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cfg = s.Config
	secrets := s.Secrets
	r.places = &realpath.Cache{For: identitiesFor, Now: r.now, Places: func() (all, guard, sessions []string) { return pl[0], pl[1], pl[2] },
		Secrets: func() []string { return secrets }, Home: r.home}
}

func (r *remoteRules) current() (managedconfig.Config, *realpath.Cache) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg, r.places
}

func (r *remoteRules) Decide(ctx context.Context, c judgement.Call) judgement.Outcome {
	cfg, places := r.current()
	var files map[string]string
	if c.Read != nil {
		files = classifier.ReadRuns(c.Payload, c.Read) // as this worker's user, never root
	}
	c.Resolved = resolution(c.Payload, places, files)
	if c.Learn != nil && c.Flow.Private != nil && !c.Flow.Private.Seen {
		// Root cannot read the user's transcripts, and whether the call sends is root's to
		// say: the worker brings the flow up to date before any call after a private read.
		c.Flow = c.Learn(c.Flow)
	}
	d := decision{Call: c}
	if c.FlowErr != nil {
		d.Call.FlowErr, d.FlowErr = nil, c.FlowErr.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, askWait)
	defer cancel()
	var o judgement.Outcome
	if err := r.link.call(ctx, kindDecide, d, &o); err != nil {
		return r.local(cfg).Refuse(c, ruleid.ClassifierError, "root could not judge it ("+err.Error()+")")
	}
	return o
}

func (r *remoteRules) Refuse(c judgement.Call, rule, reason string) judgement.Outcome {
	cfg, _ := r.current()
	ctx, cancel := context.WithTimeout(context.Background(), askWait)
	defer cancel()
	var o judgement.Outcome
	if err := r.link.call(ctx, kindRefuse, refusal{Call: c, Rule: rule, Reason: reason}, &o); err != nil {
		return r.local(cfg).Refuse(c, rule, reason)
	}
	return o
}

// resolution is p where the Mac's links take its paths as this process's user sees them, with
// the files it runs as read: the payload only when it differs, so that the usual call crosses
// the link once.
func resolution(p claudehook.Payload, places *realpath.Cache, files map[string]string) *judgement.Resolution {
	r := &judgement.Resolution{Files: files}
	if out, differs := realpath.Resolve(p, filepath.EvalSymlinks, places.Get); differs {
		r.Payload, r.Differs = out, true
	}
	return r
}

// local is the judgement a worker can make alone: refusals only, with no policy to judge by.
func (r *remoteRules) local(cfg managedconfig.Config) judgement.Judge {
	return judgement.Judge{Cfg: cfg, Now: r.now}
}

// InstructionFindings asks root what an instruction file's text holds; a link down finds
// nothing this time (the file is looked at again at the next housekeeping).
func (r *remoteRules) InstructionFindings(text string) []classifier.Verdict {
	ctx, cancel := context.WithTimeout(context.Background(), askWait)
	defer cancel()
	var out []classifier.Verdict
	_ = r.link.call(ctx, kindFindings, text, &out)
	return out
}

// recordsWait bounds how long the collector waits for root to write a batch of records; past
// it the batch counts as not written, and the lane keeps its events to write again.
const recordsWait = 30 * time.Second

// records is a batch of records for root's decision log; Sync asks root to make the log
// durable once they are in.
type records struct {
	Records []telemetry.Record `json:"records,omitempty"`
	Sync    bool               `json:"sync,omitempty"`
}

// remoteSink is the decision log as a worker reaches it: root writes every record, stamped with
// the user the kernel says the worker runs as.
type remoteSink struct {
	link *link
	max  int // the bytes of records sent in one message
}

func (s remoteSink) WriteBatch(recs []telemetry.Record) error {
	for len(recs) > 0 {
		n, size := 0, 0
		for n < len(recs) {
			data, err := json.Marshal(recs[n])
			if err != nil {
				return err
			}
			if n > 0 && size+len(data) > s.max {
				break
			}
			size += len(data)
			n++
		}
		if err := s.send(records{Records: recs[:n]}); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

func (s remoteSink) Sync() error { return s.send(records{Sync: true}) }

func (s remoteSink) send(r records) error {
	ctx, cancel := context.WithTimeout(context.Background(), recordsWait)
	defer cancel()
	return s.link.call(ctx, kindRecords, r, nil)
}

// recordsChunk is the most record bytes sent in one message: one call's record at the largest
// line, with room to spare, and never more than root reads in one frame.
func recordsChunk(cfg managedconfig.Config) int {
	return int(min(max(cfg.MaxLineBytes, 1<<20), 64<<20)) + 1<<20
}

// remoteHealth tells root's health what the worker's collector and injector see. Notes go in
// batches (healthBatch): one message for many events, at most healthEvery late.
type remoteHealth struct{ *healthQueue }

// healthQueue holds the notes not yet sent.
type healthQueue struct {
	deliver func([]HealthNote)
	mu      sync.Mutex
	pending []HealthNote
	// now is set by a note that ends a pass: what waits goes with it at once.
	now bool
	// kick wakes run when the first note comes into an empty queue (its timer starts), a batch
	// is full or a note is to go now (sent at once).
	kick chan struct{}
	// lastScan is the last rescan's report sent; nil before the first.
	lastScan *health.ScanReport
}

// How health notes travel: up to healthBatch in one message, none waiting past healthEvery.
const (
	healthBatch = 256
	healthEvery = 200 * time.Millisecond
)

func newHealthQueue(l *link) *healthQueue {
	return newHealthQueueTo(func(batch []HealthNote) { _ = l.note(kindHealth, batch) })
}

func newHealthQueueTo(deliver func([]HealthNote)) *healthQueue {
	return &healthQueue{deliver: deliver, kick: make(chan struct{}, 1)}
}

func (q *healthQueue) send(n HealthNote) { q.add(n, false) }

// sendNow sends n, and every note waiting, without waiting out healthEvery: for the note that
// ends a rescan, whose wait would otherwise wake an idle worker a second time for every pass.
func (q *healthQueue) sendNow(n HealthNote) { q.add(n, true) }

// scanned sends the report that ends a rescan at once, with every note waiting. A report the
// same as the last one sent, with no note waiting, is not sent: root's health keeps the last
// and ignores one that found the same, and a hundred idle workers' reports woke root several
// times a second for nothing. Root forgets a worker's reports only when it starts a worker,
// whose queue is new.
func (q *healthQueue) scanned(r health.ScanReport) {
	q.mu.Lock()
	same := q.lastScan != nil && q.lastScan.Equal(r) && len(q.pending) == 0
	if !same {
		q.lastScan = &r
	}
	q.mu.Unlock()
	if !same {
		q.sendNow(HealthNote{Op: "scanned", Scan: &r})
	}
}

func (q *healthQueue) add(n HealthNote, now bool) {
	q.mu.Lock()
	q.pending = append(q.pending, n)
	q.now = q.now || now
	wake := len(q.pending) == 1 || len(q.pending) >= healthBatch || now
	q.mu.Unlock()
	if wake {
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
}

// run sends the notes as they gather until ctx ends, then what is left. Its timer runs only
// while notes wait: a ticker woke every idle worker five times a second, which with a hundred
// users cost the machine more than all their idle sessions.
func (q *healthQueue) run(ctx context.Context) {
	t := time.NewTimer(healthEvery)
	t.Stop()
	defer t.Stop()
	var due <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			q.flush()
			return
		case <-q.kick:
			switch waiting, now := q.waiting(); {
			case now:
				t.Stop()
				due = nil
				q.flush()
			case waiting > 0 && due == nil:
				t.Reset(healthEvery)
				due = t.C
			}
		case <-due:
			due = nil
			q.flush()
		}
	}
}

// waiting is how many notes wait, and whether they are to go at once (a full batch, or a note
// sent with sendNow).
func (q *healthQueue) waiting() (n int, now bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending), q.now || len(q.pending) >= healthBatch
}

func (q *healthQueue) flush() {
	q.mu.Lock()
	batch := q.pending
	q.pending, q.now = nil, false
	q.mu.Unlock()
	if len(batch) > 0 {
		q.deliver(batch)
	}
}

func (h remoteHealth) Event(id string, d health.Decision, latency time.Duration) {
	h.send(HealthNote{Op: "event", ID: id, Decision: d, Latency: latency})
}
func (h remoteHealth) Quarantined(id, reason string, until time.Time) {
	h.send(HealthNote{Op: "quarantined", ID: id, Reason: reason, Until: until})
}
func (h remoteHealth) InstructionFindings(id string, files map[string][]string) {
	h.send(HealthNote{Op: "instruction_findings", ID: id, Files: files})
}
func (h remoteHealth) InstructionFiles(id string, names []string) {
	h.send(HealthNote{Op: "instruction_files", ID: id, Names: names})
}
func (h remoteHealth) CLIVersion(id, version string) {
	h.send(HealthNote{Op: "cli_version", ID: id, Reason: version})
}
func (h remoteHealth) Count(id string, code health.Code) {
	h.send(HealthNote{Op: "count", ID: id, Code: code, N: 1})
}
func (h remoteHealth) CountN(id string, code health.Code, n int) {
	h.send(HealthNote{Op: "count", ID: id, Code: code, N: n})
}

var _ collector.Health = remoteHealth{}

// sessionEvents is the injector's recorder in a worker: health hears of each session through
// root, and the collector follows what the injector finds.
type sessionEvents struct {
	remoteHealth
	col *collector.Collector
}

func (e sessionEvents) SessionSeen(id, dir string) {
	e.send(HealthNote{Op: "session_seen", ID: id, Dir: dir})
	e.col.Track(dir)
}
func (e sessionEvents) SessionHooked(id string, unverified bool) {
	e.send(HealthNote{Op: "session_hooked", ID: id, Unverified: unverified})
}
func (e sessionEvents) SessionUnhooked(id string, err error) {
	e.send(HealthNote{Op: "session_unhooked", ID: id, Reason: err.Error()})
}
func (e sessionEvents) SettingsRepaired(id string, _ []string) {
	e.Count(id, health.CodeSettingsRepaired)
}
func (e sessionEvents) SessionTampered(id string, what []string) {
	e.col.Quarantine(id, strings.Join(what, "; "))
}
func (e sessionEvents) SessionGone(id string) {
	e.send(HealthNote{Op: "session_gone", ID: id})
	e.col.Untrack(id)
}
func (e sessionEvents) Scanned(r health.ScanReport) { e.scanned(r) }
func (e sessionEvents) SessionChanged(id string)    { e.col.Stir(id) }

// logHandler sends a worker's log to root, which logs it under the user's name; with the link
// down, to the worker's stderr, which root also reads.
type logHandler struct {
	link     *link
	level    *slog.LevelVar
	fallback slog.Handler
	attrs    []slog.Attr
}

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	line := logLine{Level: int(r.Level), Msg: r.Message, Attrs: map[string]any{}}
	add := func(a slog.Attr) bool {
		v := a.Value.Resolve()
		if v.Kind() == slog.KindAny {
			if err, ok := v.Any().(error); ok {
				line.Attrs[a.Key] = err.Error()
				return true
			}
		}
		line.Attrs[a.Key] = v.Any()
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	if err := h.link.note(kindLog, line); err != nil {
		return h.fallback.Handle(ctx, r)
	}
	return nil
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	c.fallback = h.fallback.WithAttrs(as)
	return &c
}

// WithGroup flattens: a worker's log has no groups root needs to keep apart.
func (h *logHandler) WithGroup(string) slog.Handler { return h }
