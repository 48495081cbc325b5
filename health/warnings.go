package health

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// Warning is one abnormal state, with what to do about it.
type Warning struct {
	Code     Code     `json:"code"`
	Severity Severity `json:"severity"`
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
	add := func(code Code, msg string, sessions []string) {
		info := code.Info()
		ws = append(ws, Warning{Code: code, Severity: info.Severity, Message: msg, Action: info.Action, Sessions: listed(sessions)})
	}
	c := h.config
	if c.Problem != "" && (c.Origin == managedconfig.OriginLastGood || c.Origin == managedconfig.OriginInvalid) {
		state := "running on the last good copy"
		switch {
		case c.Origin == managedconfig.OriginInvalid && c.Mode == managedconfig.Enforce:
			state = "it asks for enforce and no good copy exists, so every tool call is DENIED"
		case c.Origin == managedconfig.OriginInvalid:
			state = "coworkbridge is OFF"
		}
		add(CodeConfigInvalid, "managed.json is invalid ("+state+"): "+c.Problem, nil)
	}
	if c.PolicyProblem != "" {
		add(CodeConfigInvalid, "the policy in managed.json does not compile (running on "+c.PolicyFallback+"): "+c.PolicyProblem, nil)
	}
	if h.dropIn != "" {
		add(CodeManagedSettings, h.dropIn, nil)
	}
	h.sessionWarnings(now, add)
	h.scanWarnings(add)
	h.counterWarnings(add)
	return ws
}

func (h *Health) sessionWarnings(now time.Time, add func(code Code, msg string, sessions []string)) {
	var unhooked, unverified, hookedLong, quarantined, injected, oldCLI []string
	var oldVersions []string
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
		for _, v := range s.CLIVersions {
			if !claudehook.HonoursOnFailure(v) {
				oldCLI = append(oldCLI, s.ID)
				if !slices.Contains(oldVersions, v) {
					oldVersions = append(oldVersions, v)
				}
				break
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
		add(CodeSessionQuarantined, fmt.Sprintf("%d session(s) are quarantined: the agent tried to disable or fool coworkbridge (%s); every tool call there is denied", len(quarantined), reasons[0]), quarantined)
	}
	if len(injected) > 0 {
		add(CodeInstructionFound, fmt.Sprintf("%d session(s) have instruction or memory files holding text an agent would obey: %s", len(injected), strings.Join(listed(files), "; ")), injected)
	}
	if len(oldCLI) > 0 {
		add(CodeCLIWithoutOnFailure, fmt.Sprintf("%d session(s) run a Claude Code older than %s (%s): a hook killed or hung there lets the call run", len(oldCLI), claudehook.OnFailureSince, strings.Join(listed(oldVersions), ", ")), oldCLI)
	}
	if len(unhooked) > 0 {
		add(CodeSessionUnhooked, fmt.Sprintf("%d session(s) do not carry the coworkbridge hook", len(unhooked)), unhooked)
	}
	if len(unverified) > 0 {
		add(CodeSessionUnverified, fmt.Sprintf("%d session(s) were hooked while already running and have sent no event since", len(unverified)), unverified)
	}
	if len(hookedLong) > 0 && !anyConfirmed {
		add(CodeHookedButSilent, fmt.Sprintf("%d session(s) hooked for over %v and not one event has arrived", len(hookedLong), silentAfter), hookedLong)
	}
}

func (h *Health) scanWarnings(add func(code Code, msg string, sessions []string)) {
	r := h.scan
	if h.config.Enabled && len(r.Roots) > 0 && len(r.MissingRoots) == len(r.Roots) {
		add(CodeNoSessionsRoot, "none of the sessions roots exists: "+strings.Join(r.Roots, ", "), nil)
	}
	if len(r.LowSpace) > 0 {
		add(CodeSessionsVolumeFull, fmt.Sprintf("the volume of %d sessions root(s) is full or nearly so: hooks cannot hand over tool calls, and in enforce mode every call is denied", len(r.LowSpace)), r.LowSpace)
	}
	if len(r.Unrecognised) > 0 {
		add(CodeLayoutUnrecognised, fmt.Sprintf("%d folder(s) under the sessions roots do not match the known Cowork layout", len(r.Unrecognised)), r.Unrecognised)
	}
	if r.WatchLimited > 0 || r.Truncated {
		add(CodeWatchLimit, fmt.Sprintf("%d live session(s) are kept hooked by the periodic rescan only (watch or session limit reached)", r.WatchLimited), nil)
	}
}

func (h *Health) counterWarnings(add func(code Code, msg string, sessions []string)) {
	w := h.win
	for _, info := range registry { // in the registry's order, the reference's
		n := w.counts[info.Code]
		if n == 0 {
			continue
		}
		add(info.Code, countedMessage(info, n), w.sessions[info.Code])
	}
}

// countedMessage is a counted code's warning: how often, and what.
func countedMessage(info CodeInfo, n uint64) string {
	switch info.Code {
	case CodeDecisionsUnconsumed:
		return fmt.Sprintf("%d decision(s) were never read: their hooks gave up before the daemon answered", n)
	case CodeMalformedLines:
		return fmt.Sprintf("%d spool line(s) could not be decoded", n)
	case CodeOversizedLines:
		return fmt.Sprintf("%d event(s) exceeded max_line_bytes", n)
	case CodeSettingsRepaired:
		return fmt.Sprintf("%d time(s) the coworkbridge hook was removed or disabled in a session and restored", n)
	case CodeUnguardedCall:
		return fmt.Sprintf("%d tool call(s) ran without coworkbridge: the transcript shows them, but no hook reached the daemon or the deny was not obeyed", n)
	case CodeSpoolRefused:
		return fmt.Sprintf("%d time(s) a session's spool was a link, a FIFO or otherwise not a plain file, and was not read", n)
	case CodeDecisionFailed:
		return fmt.Sprintf("%d time(s) a decision or the alive lease could not be written into a session", n)
	case CodeTelemetryFailed:
		return fmt.Sprintf("%d decision log write(s) failed", n)
	case CodeDropInOverridden:
		return fmt.Sprintf("%d call(s) on the Mac reached the session's own hook but never the managed-settings drop-in's, which Claude Code runs first: the drop-in and lockdown are not in force there (server-managed settings, or a cached copy of them, took their place)", n)
	}
	return fmt.Sprintf("%d time(s): %s", n, info.Title)
}
