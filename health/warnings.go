package health

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Warning codes: stable, for alerting rules and MDM compliance scripts.
const (
	CodeSessionUnhooked     = "session_unhooked"
	CodeSessionUnverified   = "session_unverified"
	CodeHookedButSilent     = "hooked_but_silent"
	CodeLayoutUnrecognised  = "layout_unrecognised"
	CodeNoSessionsRoot      = "no_sessions_root"
	CodeWatchLimit          = "watch_limit_reached"
	CodeDecisionsUnconsumed = "decisions_unconsumed"
	CodeMalformedLines      = "malformed_lines"
	CodeOversizedLines      = "oversized_lines"
	CodeSettingsRepaired    = "settings_repaired"
	CodeConfigInvalid       = "config_invalid"
	CodeTelemetryFailed     = "telemetry_write_failed"
	CodeSpoolRefused        = "spool_refused"
	CodeDecisionFailed      = "decision_write_failed"
	CodeSessionQuarantined  = "session_quarantined"
	CodeUnguardedCall       = "unguarded_call"
	CodeSessionsVolumeFull  = "sessions_volume_full"
	CodeInstructionFound    = "instruction_injection"
)

// Warning is one abnormal state, with what to do about it.
type Warning struct {
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Action   string   `json:"action"`
	Sessions []string `json:"sessions,omitempty"`
}

// unhookedGrace is how long a session found may wait for its hook before it counts as unhooked
// without an error: a removal in progress or a busy scan can delay an injection that long.
const unhookedGrace = time.Minute

// maxListed bounds the sessions or paths named in one warning.
const maxListed = 20

func listed(items []string) []string {
	if len(items) > maxListed {
		return append(items[:maxListed:maxListed], fmt.Sprintf("... and %d more", len(items)-maxListed))
	}
	return items
}

// warningsLocked derives the active warnings. Callers hold mu.
func (h *Health) warningsLocked(now time.Time) []Warning {
	var ws []Warning
	add := func(code, msg, action string, sessions []string) {
		ws = append(ws, Warning{Code: code, Message: msg, Action: action, Sessions: listed(sessions)})
	}
	c := h.config
	if c.Problem != "" && (c.Origin == "last-good" || c.Origin == "invalid") {
		state := "running on the last good copy"
		switch {
		case c.Origin == "invalid" && c.Mode == "enforce":
			state = "it asks for enforce and no good copy exists, so every tool call is DENIED"
		case c.Origin == "invalid":
			state = "coworkbridge is OFF"
		}
		add(CodeConfigInvalid, "managed.json is invalid ("+state+"): "+c.Problem,
			"fix the file your MDM delivers; 'coworkbridge validate FILE' lists every problem", nil)
	}
	if c.PolicyProblem != "" {
		add(CodeConfigInvalid, "the policy in managed.json does not compile (running on "+c.PolicyFallback+"): "+c.PolicyProblem,
			"fix the rule files or rule ids it names; 'coworkbridge validate' lists every problem", nil)
	}
	h.sessionWarnings(now, add)
	h.scanWarnings(add)
	h.counterWarnings(add)
	return ws
}

func (h *Health) sessionWarnings(now time.Time, add func(code, msg, action string, sessions []string)) {
	var unhooked, unverified, hookedLong, quarantined, injected []string
	var reasons, files []string
	anyConfirmed := false
	for _, s := range h.sortedSessions() {
		if !s.Gone.IsZero() {
			continue
		}
		if s.Quarantined.After(now) {
			quarantined = append(quarantined, s.ID)
			reasons = append(reasons, s.QuarantineReason)
		}
		if len(s.Instructions) > 0 {
			injected = append(injected, s.ID)
			for _, f := range slices.Sorted(maps.Keys(s.Instructions)) {
				files = append(files, s.ID+"/"+f+" ("+strings.Join(s.Instructions[f], ", ")+")")
			}
		}
		switch {
		case s.Seen && !s.Hooked && (s.Unhooked != "" || now.Sub(s.FirstSeen) > unhookedGrace):
			// Found and not yet hooked is the moment between discovery and injection, not a
			// fault: only a failed attempt, or one that never came, is.
			unhooked = append(unhooked, s.ID)
		case s.Unverified && !s.Confirmed:
			unverified = append(unverified, s.ID)
		}
		if s.Hooked && now.Sub(s.HookedAt) > silentAfter {
			hookedLong = append(hookedLong, s.ID)
			anyConfirmed = anyConfirmed || s.Confirmed
		}
	}
	if len(quarantined) > 0 {
		add(CodeSessionQuarantined, fmt.Sprintf("%d session(s) are quarantined: the agent tried to disable or fool coworkbridge (%s); every tool call there is denied", len(quarantined), reasons[0]),
			"review the session's decision log records (rule coworkbridge.quarantine and the attempts before it); the quarantine lifts by itself once the daemon has repaired the session and no attempt has followed", quarantined)
	}
	if len(injected) > 0 {
		add(CodeInstructionFound, fmt.Sprintf("%d session(s) have instruction or memory files holding text an agent would obey: %s", len(injected), strings.Join(listed(files), "; ")),
			"read the files named: text that tells the agent to hide things, claims approvals or sends secrets did not come from the user; coworkbridge never changes these files (with policy.quarantine_on_injection, enforce mode denies every call there until the text is gone)", injected)
	}
	if len(unhooked) > 0 {
		add(CodeSessionUnhooked, fmt.Sprintf("%d session(s) do not carry the coworkbridge hook", len(unhooked)),
			"see the daemon log for each session's error (code session_unhooked)", unhooked)
	}
	if len(unverified) > 0 {
		add(CodeSessionUnverified, fmt.Sprintf("%d session(s) were hooked while already running and have sent no event since", len(unverified)),
			"ask the user to start a new Cowork task; a running session may not have reloaded its settings", unverified)
	}
	if len(hookedLong) > 0 && !anyConfirmed {
		add(CodeHookedButSilent, fmt.Sprintf("%d session(s) hooked for over %v and not one event has arrived", len(hookedLong), silentAfter),
			"Cowork may have changed its session layout or mounts; check that tool calls in Cowork reach .claude/coworkbridge/events.jsonl", hookedLong)
	}
}

func (h *Health) scanWarnings(add func(code, msg, action string, sessions []string)) {
	r := h.scan
	if h.config.Enabled && len(r.Roots) > 0 && len(r.MissingRoots) == len(r.Roots) {
		add(CodeNoSessionsRoot, "none of the sessions roots exists: "+strings.Join(r.Roots, ", "),
			"check that Claude Desktop is installed for this user, or correct sessions_roots", nil)
	}
	if len(r.LowSpace) > 0 {
		add(CodeSessionsVolumeFull, fmt.Sprintf("the volume of %d sessions root(s) is full or nearly so: hooks cannot hand over tool calls, and in enforce mode every call is denied", len(r.LowSpace)),
			"free disk space on that volume", r.LowSpace)
	}
	if len(r.Unrecognised) > 0 {
		add(CodeLayoutUnrecognised, fmt.Sprintf("%d folder(s) under the sessions roots do not match the known Cowork layout", len(r.Unrecognised)),
			"Cowork may have changed its layout; report these paths to the coworkbridge maintainers", r.Unrecognised)
	}
	if r.WatchLimited > 0 || r.Truncated {
		add(CodeWatchLimit, fmt.Sprintf("%d live session(s) are kept hooked by the periodic rescan only (watch or session limit reached)", r.WatchLimited),
			"repairs may take up to rescan_interval; clean up old Cowork sessions", nil)
	}
}

func (h *Health) counterWarnings(add func(code, msg, action string, sessions []string)) {
	w := h.win
	if w.unconsumed > 0 {
		add(CodeDecisionsUnconsumed, fmt.Sprintf("%d decision(s) were never read: their hooks gave up before the daemon answered", w.unconsumed),
			"the daemon is too slow for decision_timeout; check its load and the decision latency", w.sessions[CodeDecisionsUnconsumed])
	}
	if w.malformed > 0 {
		add(CodeMalformedLines, fmt.Sprintf("%d spool line(s) could not be decoded", w.malformed),
			"a hook or the spool was damaged; in enforce mode those calls were denied", w.sessions[CodeMalformedLines])
	}
	if w.oversized > 0 {
		add(CodeOversizedLines, fmt.Sprintf("%d event(s) exceeded max_line_bytes", w.oversized),
			"raise max_line_bytes if these were legitimate; in enforce mode they were denied", w.sessions[CodeOversizedLines])
	}
	if w.repaired > 0 {
		add(CodeSettingsRepaired, fmt.Sprintf("%d time(s) the coworkbridge hook was removed or disabled in a session and restored", w.repaired),
			"something in the session edits its settings; review the decision log for those sessions", w.sessions[CodeSettingsRepaired])
	}
	if w.unguarded > 0 {
		add(CodeUnguardedCall, fmt.Sprintf("%d tool call(s) ran without coworkbridge: the transcript shows them, but no hook reached the daemon or the deny was not obeyed", w.unguarded),
			"review the decision log records with rule coworkbridge.unguarded-call; in enforce mode the sessions were quarantined", w.sessions[CodeUnguardedCall])
	}
	if w.refused > 0 {
		add(CodeSpoolRefused, fmt.Sprintf("%d time(s) a session's spool was a link, a FIFO or otherwise not a plain file, and was not read", w.refused),
			"something in the session replaced .claude/coworkbridge/events.jsonl; in enforce mode its calls are denied; review the session", w.sessions[CodeSpoolRefused])
	}
	if w.undecided > 0 {
		add(CodeDecisionFailed, fmt.Sprintf("%d time(s) a decision or the alive lease could not be written into a session", w.undecided),
			"enforce hooks in those sessions deny after their timeout; check the daemon log for the error (a link or a full disk)", w.sessions[CodeDecisionFailed])
	}
	if w.telemetry > 0 {
		add(CodeTelemetryFailed, fmt.Sprintf("%d decision log write(s) failed", w.telemetry),
			"check free disk space and the permissions of the telemetry folder", nil)
	}
}
