package health

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/coworkbridge/coworkbridge/internal/metronome"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/renameio/v2"
)

// SnapshotVersion is the format version of health.json.
const SnapshotVersion = 1

// Snapshot is the whole state at one moment: what the heartbeat logs and health.json holds.
type Snapshot struct {
	Version   int         `json:"version"`
	WrittenAt time.Time   `json:"written_at"`
	Daemon    DaemonInfo  `json:"daemon"`
	Config    ConfigState `json:"config"`
	Counts    Counts      `json:"counts"`
	Totals    Totals      `json:"totals"`
	Today     Today       `json:"today"`
	Scan      ScanReport  `json:"scan"`
	// CLIVersions are the Claude Code versions the live sessions' transcripts name, oldest first.
	CLIVersions []string  `json:"cli_versions"`
	Warnings    []Warning `json:"warnings"`
	Sessions    []Session `json:"sessions"`
	// Record is the end of the decision log's hash chain at the last heartbeat: kept out of the
	// log's folder, it shows an edit of the log that relinked the whole chain after it.
	Record *RecordHead `json:"record,omitempty"`
	// Workers are system mode's per-user workers, as root sees them; none in per-user mode.
	Workers []Worker `json:"workers,omitempty"`
}

// Worker is one user's worker in system mode: the process that does the user's session-folder
// work as the user, for root.
type Worker struct {
	User string `json:"user"`
	UID  uint32 `json:"uid"`
	PID  int    `json:"pid,omitempty"`
	// Running: its link to root is up now.
	Running bool `json:"running"`
	// Starts counts its starts since the daemon's; more than one means it ended and was
	// started again (LastError says why).
	Starts    int    `json:"starts"`
	LastError string `json:"last_error,omitempty"`
	Watches   int    `json:"watches"`
	Sessions  int    `json:"sessions"`
}

// RecordHead is where the decision log's hash chain ended when the daemon last checked it.
type RecordHead struct {
	Log       string    `json:"log"`
	Head      string    `json:"head"`
	Size      int64     `json:"size"`
	CheckedAt time.Time `json:"checked_at"`
}

// DaemonInfo are the daemon's own figures.
type DaemonInfo struct {
	PID               int       `json:"pid"`
	Version           string    `json:"version"`
	StartedAt         time.Time `json:"started_at"`
	UptimeSeconds     int64     `json:"uptime_s"`
	HeartbeatInterval string    `json:"heartbeat_interval"`
	Goroutines        int       `json:"goroutines"`
	MaxRSSBytes       int64     `json:"max_rss_bytes"`
	Watches           int       `json:"watches"`
	// Decision latency since the previous heartbeat (enforce mode).
	LatencyP50Ms   float64 `json:"decision_latency_p50_ms"`
	LatencyP99Ms   float64 `json:"decision_latency_p99_ms"`
	LatencySamples int     `json:"decision_latency_samples"`
}

// Counts summarise the sessions.
type Counts struct {
	Live       int `json:"live"`
	Hooked     int `json:"hooked"`
	Unverified int `json:"unverified"`
	Confirmed  int `json:"confirmed"`
	Tracked    int `json:"tracked"`
}

// Snapshot assembles the current state. With rotate, the per-heartbeat window (counter warnings,
// latencies) starts afresh, so a warning clears one heartbeat after its cause stops.
func (h *Health) Snapshot(rotate bool) Snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	h.pruneLocked()
	s := Snapshot{
		Version: SnapshotVersion, WrittenAt: now,
		Config: h.config, Totals: h.totals, Today: h.today, Scan: h.scan,
		Warnings: h.warningsLocked(now), Sessions: h.sortedSessions(), Record: h.record,
	}
	s.Totals.Counts = maps.Clone(h.totals.Counts)
	s.Scan.MissingRoots, s.Scan.Unrecognised = listed(s.Scan.MissingRoots), listed(s.Scan.Unrecognised)
	s.count()
	if s.Today.Date != now.Format(time.DateOnly) {
		s.Today = Today{Date: now.Format(time.DateOnly)}
	}
	s.Daemon.Watches = h.scan.Watches
	s.Daemon.LatencyP50Ms, s.Daemon.LatencyP99Ms, s.Daemon.LatencySamples = percentiles(h.win.latencies)
	if rotate {
		h.win = window{sessions: map[Code][]string{}}
	}
	return s
}

// count fills Counts and CLIVersions from Sessions.
func (s *Snapshot) count() {
	s.Counts, s.CLIVersions = Counts{}, nil
	for _, se := range s.Sessions {
		s.Counts.Tracked++
		if !se.Gone.IsZero() {
			continue
		}
		s.Counts.Live++
		for _, v := range se.CLIVersions {
			if !slices.Contains(s.CLIVersions, v) && len(s.CLIVersions) < maxListed {
				s.CLIVersions = append(s.CLIVersions, v)
			}
		}
		if se.Hooked {
			s.Counts.Hooked++
		}
		if se.Unverified {
			s.Counts.Unverified++
		}
		if se.Confirmed {
			s.Counts.Confirmed++
		}
	}
	slices.SortFunc(s.CLIVersions, compareVersions)
}

// Scoped is the snapshot as one user of a shared machine may see it (system mode): only the
// sessions whose folders mine reports as the user's, their counts and totals, the warnings that
// concern them or the machine as a whole, and no other user's path anywhere. Figures the daemon
// keeps only machine-wide (would-be denials, today's counts, sessions not tracked, the decision
// log's head) are left out rather than shown as the user's.
func (s Snapshot) Scoped(mine func(path string) bool) Snapshot {
	ids := map[string]bool{}
	own := s.Sessions[:0:0]
	for _, se := range s.Sessions {
		if mine(se.Dir) {
			own = append(own, se)
			ids[se.ID] = true
		}
	}
	s.Sessions = own
	s.count()
	s.Totals = Totals{}
	for _, se := range own {
		s.Totals.Events += se.Events
		s.Totals.Denies += se.Denies
		s.Totals.Asks += se.Asks
		s.Totals.Tampering += se.Tampering
		for c, n := range se.Counts {
			if s.Totals.Counts == nil {
				s.Totals.Counts = map[Code]uint64{}
			}
			s.Totals.Counts[c] += n
		}
	}
	s.Today = Today{Date: s.Today.Date}
	s.Record = nil
	keepPaths := func(paths []string) []string {
		return slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return !mine(p) })
	}
	s.Scan.Roots, s.Scan.MissingRoots = keepPaths(s.Scan.Roots), keepPaths(s.Scan.MissingRoots)
	s.Scan.Unrecognised, s.Scan.LowSpace = keepPaths(s.Scan.Unrecognised), keepPaths(s.Scan.LowSpace)
	s.Scan.Sessions, s.Scan.Live = s.Counts.Tracked, s.Counts.Live
	var ws []Warning
	for _, w := range s.Warnings {
		if len(w.Sessions) > 0 {
			w.Sessions = slices.DeleteFunc(slices.Clone(w.Sessions), func(id string) bool { return !ids[id] })
			if len(w.Sessions) == 0 {
				continue // about other users' sessions alone
			}
		}
		w.Message = hidePaths(w.Code, w.Message, mine)
		ws = append(ws, w)
	}
	s.Warnings = ws
	return s
}

// hidePaths returns msg, or, when it names an absolute path mine does not report as the user's,
// the code's title: a path of another user's (under "/Users/bob/Library/Application Support/...",
// spaces and all) is not cut out of a message reliably, so no part of it is shown.
func hidePaths(code Code, msg string, mine func(path string) bool) string {
	for i := 0; i < len(msg); i++ {
		if msg[i] != '/' || i > 0 && !strings.ContainsRune(" (\"'=,:[", rune(msg[i-1])) {
			continue
		}
		end := i + strings.IndexAny(msg[i:]+" ", " ,;)\"'\n")
		if !mine(msg[i:end]) {
			return code.Info().Title + " (where, only an administrator may see: it names another user's files)"
		}
		i = end
	}
	return msg
}

func percentiles(lat []time.Duration) (p50, p99 float64, n int) {
	if len(lat) == 0 {
		return 0, 0, 0
	}
	sorted := slices.Clone(lat)
	slices.Sort(sorted)
	at := func(p float64) float64 {
		return float64(sorted[int(float64(len(sorted)-1)*p)].Microseconds()) / 1000
	}
	return at(0.50), at(0.99), len(sorted)
}

// Healthy reports whether no warning is active.
func (s Snapshot) Healthy() bool { return len(s.Warnings) == 0 }

// WriteFile stores the snapshot atomically as health.json (0600).
func (s Snapshot) WriteFile(path string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode health snapshot: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write health snapshot: %w", err)
	}
	if err := renameio.WriteFile(path, append(data, '\n'), 0o600, renameio.WithTempDir(filepath.Dir(path))); err != nil {
		return fmt.Errorf("write health snapshot: %w", err)
	}
	return nil
}

// ReadSnapshot loads a health.json.
func ReadSnapshot(path string) (Snapshot, error) {
	var s Snapshot
	data, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("read health snapshot: %w", err)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("read health snapshot %s: %w", path, err)
	}
	if s.Version != SnapshotVersion {
		return s, fmt.Errorf("read health snapshot %s: version %d, this build reads %d", path, s.Version, SnapshotVersion)
	}
	return s, nil
}

// HeartbeatOptions configure Heartbeat.
type HeartbeatOptions struct {
	Interval time.Duration
	// Beat is the daemon's metronome, which the heartbeat ticks on; nil: a beat of its own.
	Beat   *metronome.Metronome
	Path   string // health.json
	Logger *slog.Logger
	// Kick asks for a snapshot file now (the daemon sends on SIGUSR1).
	Kick <-chan struct{}
	// Daemon supplies the figures health cannot know (pid, version, start time).
	Daemon DaemonInfo
	// Watches, when set, counts the folders the daemon watches now, for every snapshot; without
	// it the count of the last scan is reported.
	Watches func() int
	// Check, when set, runs before each heartbeat: for checks the daemon repeats on its own
	// (the installed drop-in), whose results it records in Health.
	Check func()
	// Record, when set, checks the decision log's chain at each heartbeat and returns its head
	// (nil when there is no log to check: coworkbridge switched off).
	Record func() *RecordHead
}

// Heartbeat logs a heartbeat record and one WARN per active warning every interval, writing each
// snapshot to health.json, until ctx is done. It writes one at once on start. Failing to write
// the file is logged, never fatal.
//
// Between heartbeats the file follows every change of state (a session hooked, a warning raised
// or cleared), at most once per snapshotGap, so that status is never stale by a heartbeat.
func (h *Health) Heartbeat(ctx context.Context, o HeartbeatOptions) error {
	t := o.Beat.Ticker(o.Interval)
	defer t.Stop()
	gap := time.NewTimer(time.Hour)
	gap.Stop()
	defer gap.Stop()
	trail := time.NewTimer(time.Hour)
	trail.Stop()
	defer trail.Stop()
	pending, trailing := false, false
	h.beat(o, true)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			h.beat(o, true)
		case <-o.Kick:
			h.beat(o, false)
		case <-h.changed:
			if !pending {
				pending = true
				// At most a tenth of the daemon's time goes to writing health.json: with
				// thousands of sessions one write is megabytes, and changes keep coming.
				gap.Reset(max(snapshotGap, 10*h.lastWrite))
			}
		case <-gap.C:
			pending = false
			h.beat(o, false)
		case <-h.late:
			if !trailing {
				trailing = true
				trail.Reset(eventKick)
			}
		case <-trail.C:
			trailing = false
			h.beat(o, false)
		}
	}
}

// snapshotGap gathers a burst of changes (a scan hooking many sessions) into one write.
const snapshotGap = 200 * time.Millisecond

func (h *Health) beat(o HeartbeatOptions, log bool) {
	if log && o.Check != nil {
		o.Check()
	}
	if log && o.Record != nil {
		head := o.Record()
		h.mu.Lock()
		h.record = head
		h.mu.Unlock()
	}
	started := h.now()
	s := h.Snapshot(log)
	s.Daemon = daemonFigures(o, s.Daemon, h.now())
	if log {
		logSnapshot(o.Logger, s)
	}
	if err := s.WriteFile(o.Path); err != nil {
		o.Logger.Warn("cannot write the health snapshot", "err", err)
	}
	h.lastWrite = h.now().Sub(started)
}

func daemonFigures(o HeartbeatOptions, d DaemonInfo, now time.Time) DaemonInfo {
	in := o.Daemon
	d.PID, d.Version, d.StartedAt = in.PID, in.Version, in.StartedAt
	d.UptimeSeconds = int64(now.Sub(in.StartedAt).Seconds())
	d.HeartbeatInterval = o.Interval.String()
	d.Goroutines = runtime.NumGoroutine()
	if o.Watches != nil {
		d.Watches = o.Watches()
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		d.MaxRSSBytes = int64(ru.Maxrss)
		if runtime.GOOS != "darwin" { // Linux reports kilobytes, macOS bytes
			d.MaxRSSBytes *= 1024
		}
	}
	return d
}

func logSnapshot(log *slog.Logger, s Snapshot) {
	args := []any{
		"healthy", s.Healthy(), "warnings", len(s.Warnings),
		"mode", s.Config.Mode, "enabled", s.Config.Enabled, "config_origin", s.Config.Origin, "config_hash", s.Config.Hash,
		"cli_versions", s.CLIVersions, "sessions_live", s.Counts.Live, "sessions_hooked", s.Counts.Hooked, "sessions_unverified", s.Counts.Unverified,
		"events", s.Totals.Events, "denies", s.Totals.Denies, "asks", s.Totals.Asks,
		"uptime_s", s.Daemon.UptimeSeconds, "goroutines", s.Daemon.Goroutines, "max_rss_bytes", s.Daemon.MaxRSSBytes,
		"watches", s.Daemon.Watches, "decision_latency_p50_ms", s.Daemon.LatencyP50Ms,
		"decision_latency_p99_ms", s.Daemon.LatencyP99Ms, "decision_latency_samples", s.Daemon.LatencySamples}
	if s.Record != nil {
		args = append(args, "record_head", s.Record.Head, "record_log", s.Record.Log, "record_size", s.Record.Size)
	}
	log.Info("heartbeat", args...)
	for _, w := range s.Warnings {
		log.Warn(w.Message, "code", w.Code, "action", w.Action, "sessions", w.Sessions)
	}
}
