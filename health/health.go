// Package health keeps the daemon's account of itself: the state of every Cowork session it
// guards, counters, and the warnings an admin must see. It logs a heartbeat at a fixed interval and
// writes the same snapshot to health.json, which `coworkbridge status` reads.
//
// The worst failure of a guard is to stop guarding silently, so every abnormal state has a stable
// warning code. Health only records and reports: it never acts on sessions, and it reads no
// session files.
package health

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// MaxSessions bounds the sessions health tracks; past it new sessions are counted, not tracked.
const MaxSessions = 10_000

// forgetAfter is how long a gone session stays in the snapshot, and maxGone how many gone sessions
// it keeps at most (the most recently gone): a day of session churn must not grow the daemon or
// health.json without bound.
const (
	forgetAfter = 24 * time.Hour
	maxGone     = 200
)

// silentAfter is how long hooked sessions may stay without any event before health suspects the
// hook no longer reaches us (Cowork changed its layout or its mount).
const silentAfter = 15 * time.Minute

// maxLatencySamples bounds the decision latencies kept between heartbeats.
const maxLatencySamples = 8192

// ScanReport summarises one pass of the injector over the sessions roots.
type ScanReport struct {
	Roots        []string
	Sessions     int // session folders found
	Live         int // of which active within the live window
	MissingRoots []string
	Unrecognised []string
	Truncated    bool
	Watches      int // folders watched
	WatchLimited int // live sessions left to the rescan because the watch limit was reached
	// LowSpace names the roots whose volume is (nearly) full: hooks there cannot hand over their
	// calls, and in enforce deny every one.
	LowSpace []string
}

// Session is what health knows of one session.
type Session struct {
	ID        string    `json:"id"`
	Dir       string    `json:"dir"`
	FirstSeen time.Time `json:"first_seen"`
	// Seen: the injector found the session folder (events alone do not make a session "seen").
	Seen       bool      `json:"seen"`
	Hooked     bool      `json:"hooked"`
	HookedAt   time.Time `json:"hooked_at,omitzero"`
	Unverified bool      `json:"unverified,omitempty"`
	Confirmed  bool      `json:"confirmed"`
	LastEvent  time.Time `json:"last_event,omitzero"`
	Events     uint64    `json:"events"`
	Denies     uint64    `json:"denies"`
	Asks       uint64    `json:"asks"`
	Unhooked   string    `json:"unhooked_error,omitempty"`
	Gone       time.Time `json:"gone,omitzero"`
	// Quarantined: every call in the session is denied until then, for the reason given.
	Quarantined      time.Time `json:"quarantined_until,omitzero"`
	QuarantineReason string    `json:"quarantine_reason,omitempty"`
	Tampering        uint64    `json:"tampering"`
	// Instructions are the session's instruction and memory files found holding text an agent
	// would obey, by file (relative to the session) and the content rules that matched.
	Instructions map[string][]string `json:"instruction_findings,omitempty"`
	// InstructionFiles are the files the last scan looked at (relative to the session): what
	// Claude Code loads, what it imports, and what the walk found. The scan bounds how many.
	InstructionFiles []string `json:"instruction_files,omitempty"`
	// CLIVersions are the Claude Code versions the session's transcripts name, oldest first.
	CLIVersions []string `json:"cli_versions,omitempty"`
	// Counts are the session's counts of the codes reported through Count (malformed_lines,
	// unguarded_call, ...).
	Counts map[Code]uint64 `json:"counts,omitempty"`
}

// maxCLIVersions bounds the versions kept per session: the agent can write transcript lines
// naming any version it likes, and one session holds one CLI, so a few is plenty. The oldest are
// kept, since those are the ones that matter.
const maxCLIVersions = 4

// Totals are counters over the daemon's life.
type Totals struct {
	Events          uint64 `json:"events"`
	Denies          uint64 `json:"denies"`
	Asks            uint64 `json:"asks"`
	WouldDenies     uint64 `json:"would_denies"`
	WouldAsks       uint64 `json:"would_asks"`
	Tampering       uint64 `json:"tampering"`
	SessionsDropped uint64 `json:"sessions_not_tracked"`
	// Counts are the counts of the codes reported through Count.
	Counts map[Code]uint64 `json:"counts,omitempty"`
}

// Today counts the events of one local calendar day.
type Today struct {
	Date        string `json:"date"` // YYYY-MM-DD in the daemon's local time
	Events      uint64 `json:"events"`
	Denies      uint64 `json:"denies"`
	Asks        uint64 `json:"asks"`
	WouldDenies uint64 `json:"would_denies"`
	WouldAsks   uint64 `json:"would_asks"`
}

// window counts what happened since the last heartbeat; a counter warning stands while its
// window count is above zero, so it clears by itself one heartbeat after the trouble stops.
type window struct {
	sessions       map[Code][]string // code -> sessions
	counts         map[Code]uint64   // by Count
	latencies      []time.Duration
	latencyDropped uint64
}

// ConfigState is the daemon's configuration as health reports it.
type ConfigState struct {
	Path    string               `json:"path,omitempty"`
	Origin  managedconfig.Origin `json:"origin"`
	Hash    string               `json:"hash,omitempty"`
	Mode    managedconfig.Mode   `json:"mode"`
	Enabled bool                 `json:"enabled"`
	// FailingClosed: the file asks for enforce but is invalid, and there is no last good copy,
	// so every call in every session is denied until it is fixed.
	FailingClosed bool   `json:"failing_closed,omitempty"`
	Problem       string `json:"problem,omitempty"`
	// Lockdown: managed.json asks for the drop-in's lockdown (whether the drop-in installed
	// carries it is the managed_settings_drop_in warning's to say).
	Lockdown bool `json:"lockdown,omitempty"`
	// PolicyProblem: the file is valid but its policy (rule files, rule ids) does not compile, so
	// PolicyFallback ("the previous policy", "the built-in rules") is in force instead.
	PolicyProblem  string `json:"policy_problem,omitempty"`
	PolicyFallback string `json:"policy_fallback,omitempty"`
}

// Health is safe for concurrent use.
type Health struct {
	now func() time.Time

	mu       sync.Mutex
	sessions map[string]*Session
	totals   Totals
	win      window
	today    Today
	scan     ScanReport
	// scans are each injector's latest pass, by source (one per user's worker in system mode),
	// and scan their sum.
	scans  map[string]ScanReport
	config ConfigState
	record *RecordHead // the decision log's chain head at the last heartbeat
	kicked time.Time   // when events last asked for health.json to be written
	// lastWrite is what the last snapshot took to make and write; only Run's loop uses it.
	lastWrite time.Duration
	// goneSince counts departures since the last prune.
	goneSince int
	// dropIn is what is wrong with the installed managed-settings drop-in, "" when nothing is.
	dropIn string
	// changed is signalled (never blocking) when the state status reports changes, so that
	// the snapshot file follows it rather than waiting for the next heartbeat.
	changed chan struct{}
	// late is signalled when events came within eventKick of the last write they asked for:
	// the snapshot writer then writes once more at the end of that window, so that the last
	// events of a burst are in health.json within eventKick, not at the next heartbeat.
	late chan struct{}
}

// New returns an empty Health reading time from now.
func New(now func() time.Time) *Health {
	if now == nil {
		now = time.Now
	}
	return &Health{now: now, sessions: map[string]*Session{}, win: window{sessions: map[Code][]string{}}, changed: make(chan struct{}, 1), late: make(chan struct{}, 1)}
}

// session returns the entry for id, creating it unless the limit is reached. Callers hold mu.
func (h *Health) session(id string) *Session {
	if s, ok := h.sessions[id]; ok {
		return s
	}
	if len(h.sessions) >= MaxSessions {
		h.pruneLocked()
		if len(h.sessions) >= MaxSessions {
			h.totals.SessionsDropped++
			return &Session{ID: id} // counted, not kept
		}
	}
	s := &Session{ID: id, FirstSeen: h.now()}
	h.sessions[id] = s
	return s
}

func (h *Health) pruneLocked() {
	cut := h.now().Add(-forgetAfter)
	var gone []*Session
	for id, s := range h.sessions {
		switch {
		case s.Gone.IsZero():
		case s.Gone.Before(cut):
			delete(h.sessions, id)
		default:
			gone = append(gone, s)
		}
	}
	if len(gone) <= maxGone {
		return
	}
	slices.SortFunc(gone, func(a, b *Session) int { return b.Gone.Compare(a.Gone) })
	for _, s := range gone[maxGone:] {
		delete(h.sessions, s.ID)
	}
}

func (h *Health) noteSession(code Code, id string) {
	if !slices.Contains(h.win.sessions[code], id) {
		h.win.sessions[code] = append(h.win.sessions[code], id)
	}
}

// SessionSeen records a live session folder.
func (h *Health) SessionSeen(id, dir string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.session(id)
	if s.Dir == dir && s.Gone.IsZero() && s.Seen {
		return // seen again: health.json need not be written again
	}
	h.changedLocked()
	s.Dir, s.Gone, s.Seen = dir, time.Time{}, true
}

// SessionHooked records that our current entry is in the session's settings.
//
// Every rescan says so of every session it finds as it was: only a change is written to
// health.json, which with 10,000 sessions is megabytes that each rescan rewrote many times.
func (h *Health) SessionHooked(id string, unverified bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.session(id)
	if s.Hooked && s.Unhooked == "" && (s.Unverified || !unverified || s.Confirmed) {
		return
	}
	h.changedLocked()
	if !s.Hooked {
		s.HookedAt = h.now()
	}
	s.Hooked, s.Unhooked = true, ""
	if unverified && !s.Confirmed {
		s.Unverified = true
	}
}

// SessionUnhooked records that our entry could not be put in place.
func (h *Health) SessionUnhooked(id string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changedLocked()
	s := h.session(id)
	s.Hooked = false
	s.Unhooked = "unknown error"
	if err != nil {
		s.Unhooked = err.Error()
	}
}

// Quarantined records that the session is quarantined until the given time: an attempt to
// disable or fool the guard was seen in it.
func (h *Health) Quarantined(id, reason string, until time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changedLocked()
	s := h.session(id)
	s.Quarantined, s.QuarantineReason = until, reason
	s.Tampering++
	h.totals.Tampering++
}

// InstructionFindings records what the scan of the session's instruction and memory files
// found now: file → rules. An empty map clears the warning.
func (h *Health) InstructionFindings(id string, files map[string][]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(files) == 0 {
		files = nil
	}
	s := h.session(id)
	if maps.EqualFunc(s.Instructions, files, slices.Equal) {
		return // found as before, as at every rescan of an idle session
	}
	h.changedLocked()
	s.Instructions = files
}

// InstructionFiles records which files the scan of the session's instructions looked at.
func (h *Health) InstructionFiles(id string, names []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.session(id)
	if slices.Equal(s.InstructionFiles, names) {
		return
	}
	h.changedLocked()
	s.InstructionFiles = slices.Clone(names)
}

// Count records one occurrence of code in the session id, or with id "" in no session: the one
// call for every counted code (those marked Counted in the registry). Its warning stands until a
// heartbeat passes with none.
func (h *Health) Count(id string, code Code) { h.CountN(id, code, 1) }

// CountN records n occurrences of code at once (decision files swept unread together).
func (h *Health) CountN(id string, code Code, n int) {
	if n <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changedLocked()
	counts := []*map[Code]uint64{&h.totals.Counts, &h.win.counts}
	if id != "" {
		counts = append(counts, &h.session(id).Counts)
	}
	for _, m := range counts {
		if *m == nil {
			*m = map[Code]uint64{}
		}
		(*m)[code] += uint64(n)
	}
	if id != "" {
		h.noteSession(code, id)
	}
}

// CLIVersion records that a transcript of the session names Claude Code version v.
func (h *Health) CLIVersion(id, v string) {
	if _, ok := claudehook.ParseVersion(v); !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.session(id)
	if slices.Contains(s.CLIVersions, v) {
		return
	}
	h.changedLocked()
	s.CLIVersions = append(s.CLIVersions, v)
	slices.SortFunc(s.CLIVersions, compareVersions)
	if len(s.CLIVersions) > maxCLIVersions {
		s.CLIVersions = s.CLIVersions[:maxCLIVersions]
	}
}

func compareVersions(a, b string) int {
	switch {
	case claudehook.VersionBefore(a, b):
		return -1
	case claudehook.VersionBefore(b, a):
		return 1
	}
	return strings.Compare(a, b)
}

// SetDropIn records what is wrong with the installed managed-settings drop-in ("" for nothing).
func (h *Health) SetDropIn(problem string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dropIn != problem {
		h.dropIn = problem
		h.changedLocked()
	}
}

// SessionGone records that the session left the live set.
func (h *Health) SessionGone(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changedLocked()
	if s, ok := h.sessions[id]; ok {
		s.Gone = h.now()
	}
	h.goneSince++
	if h.goneSince >= maxGone/2 { // prune in steps, not at every departure
		h.goneSince = 0
		h.pruneLocked()
	}
}

// Scanned records the injector's latest pass.
func (h *Health) Scanned(r ScanReport) { h.ScannedBy("", r) }

// ScannedBy records the latest pass of the injector named source: in system mode each user's
// worker has its own, and the snapshot shows their sum. A pass that found what the last one
// did asks for no new snapshot: a hundred workers' rescans rewrote health.json several times a
// second.
func (h *Health) ScannedBy(source string, r ScanReport) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if prev, ok := h.scans[source]; ok && prev.Equal(r) {
		return
	}
	if h.scans == nil {
		h.scans = map[string]ScanReport{}
	}
	h.scans[source] = r
	h.scan = sumScans(h.scans)
	h.changedLocked()
}

// ScanGone forgets the passes of the injector named source, which will make no more (a user's
// worker stopped for good).
func (h *Health) ScanGone(source string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.scans[source]; !ok {
		return
	}
	delete(h.scans, source)
	h.scan = sumScans(h.scans)
	h.changedLocked()
}

// Equal reports whether two passes found the same.
func (r ScanReport) Equal(o ScanReport) bool {
	return slices.Equal(r.Roots, o.Roots) && r.Sessions == o.Sessions && r.Live == o.Live &&
		slices.Equal(r.MissingRoots, o.MissingRoots) && slices.Equal(r.Unrecognised, o.Unrecognised) &&
		r.Truncated == o.Truncated && r.Watches == o.Watches && r.WatchLimited == o.WatchLimited &&
		slices.Equal(r.LowSpace, o.LowSpace)
}

// sumScans is what the injectors' latest passes found together: counts added, lists joined
// (in the sources' order, each name once).
func sumScans(scans map[string]ScanReport) ScanReport {
	if len(scans) == 1 {
		for _, r := range scans {
			return r
		}
	}
	var sum ScanReport
	join := func(to []string, from []string) []string {
		for _, s := range from {
			if !slices.Contains(to, s) {
				to = append(to, s)
			}
		}
		return to
	}
	for _, src := range slices.Sorted(maps.Keys(scans)) {
		r := scans[src]
		sum.Roots = join(sum.Roots, r.Roots)
		sum.MissingRoots = join(sum.MissingRoots, r.MissingRoots)
		sum.Unrecognised = join(sum.Unrecognised, r.Unrecognised)
		sum.LowSpace = join(sum.LowSpace, r.LowSpace)
		sum.Sessions += r.Sessions
		sum.Live += r.Live
		sum.Watches += r.Watches
		sum.WatchLimited += r.WatchLimited
		sum.Truncated = sum.Truncated || r.Truncated
	}
	return sum
}

// Decision is the outcome of one event, as the collector reports it.
type Decision string

// Decisions the collector reports. The Would ones are a rule's objection that was not applied
// (observe mode, or the rule in observe): counted apart, so that a switch to enforce does not
// show observe's objections as denies.
const (
	Allow     Decision = "allow"
	Ask       Decision = "ask"
	Deny      Decision = "deny"
	WouldAsk  Decision = "would-ask"
	WouldDeny Decision = "would-deny"
)

// Resume carries on today's counts from a previous run's snapshot (health.json), when they are
// today's: a restart does not set the day's denies and asks back to nothing.
func (h *Health) Resume(prev Today) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if prev.Date == h.now().Format(time.DateOnly) && h.today.Events == 0 {
		h.today = prev
	}
}

// eventKick is how often events alone make health.json be written again.
const eventKick = 5 * time.Second

// Event records one handled event and, in enforce mode, how long its decision took.
func (h *Health) Event(id string, d Decision, latency time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.session(id)
	s.Events++
	s.LastEvent = h.now()
	s.Confirmed, s.Unverified = true, false
	h.totals.Events++
	if date := s.LastEvent.Format(time.DateOnly); h.today.Date != date {
		h.today = Today{Date: date}
	}
	h.today.Events++
	switch d {
	case Deny:
		s.Denies++
		h.totals.Denies++
		h.today.Denies++
	case Ask:
		s.Asks++
		h.totals.Asks++
		h.today.Asks++
	case WouldDeny:
		h.totals.WouldDenies++
		h.today.WouldDenies++
	case WouldAsk:
		h.totals.WouldAsks++
		h.today.WouldAsks++
	}
	// Counts are in health.json within eventKick, not only at the next heartbeat, without a
	// write per event.
	if now := h.now(); now.Sub(h.kicked) >= eventKick {
		h.kicked = now
		h.changedLocked()
	} else {
		select {
		case h.late <- struct{}{}:
		default: // one is pending already
		}
	}
	if latency > 0 {
		if len(h.win.latencies) < maxLatencySamples {
			h.win.latencies = append(h.win.latencies, latency)
		} else {
			h.win.latencyDropped++
		}
	}
}

// SetConfig records the configuration in force.
func (h *Health) SetConfig(c ConfigState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changedLocked()
	c.PolicyProblem, c.PolicyFallback = h.config.PolicyProblem, h.config.PolicyFallback
	h.config = c
}

// SetPolicyProblem records that the policy does not compile (problem, what runs instead), or
// with "" that it compiles again.
func (h *Health) SetPolicyProblem(problem, fallback string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changedLocked()
	h.config.PolicyProblem, h.config.PolicyFallback = problem, fallback
}

// changedLocked notes a change of state for the snapshot writer. Callers hold mu.
func (h *Health) changedLocked() {
	select {
	case h.changed <- struct{}{}:
	default: // one is pending already
	}
}

// SwitchedOff records that coworkbridge was switched off and its hooks taken out of every
// session: none is hooked any more.
func (h *Health) SwitchedOff() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changedLocked()
	for _, s := range h.sessions {
		s.Hooked, s.Unverified = false, false
	}
}

// sortedSessions returns copies of the tracked sessions, by id.
func (h *Health) sortedSessions() []Session {
	out := make([]Session, 0, len(h.sessions))
	for _, s := range h.sessions {
		c := *s
		c.Counts = maps.Clone(s.Counts) // Count writes the live one
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
