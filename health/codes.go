package health

import (
	"slices"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// Code is a stable code for an abnormal state, for alerting rules and MDM compliance scripts: the
// heartbeat's warnings and status carry it, and so does every daemon log line about such a state
// (under the key "code").
type Code string

// Severity says how urgent a code is.
type Severity string

const (
	// SeverityError: sessions are not guarded as configured, calls are denied because of it, or
	// records are lost.
	SeverityError Severity = "error"
	// SeverityWarning: something needs a look; every session is still guarded.
	SeverityWarning Severity = "warning"
)

// The codes. Those in LogOnly appear in daemon log lines only, never as a heartbeat warning.
const (
	CodeSessionUnhooked     Code = "session_unhooked"
	CodeSessionUnverified   Code = "session_unverified"
	CodeHookedButSilent     Code = "hooked_but_silent"
	CodeLayoutUnrecognised  Code = "layout_unrecognised"
	CodeNoSessionsRoot      Code = "no_sessions_root"
	CodeSessionsVolumeFull  Code = "sessions_volume_full"
	CodeWatchLimit          Code = "watch_limit_reached"
	CodeDecisionsUnconsumed Code = "decisions_unconsumed"
	CodeMalformedLines      Code = "malformed_lines"
	CodeOversizedLines      Code = "oversized_lines"
	CodeSettingsRepaired    Code = "settings_repaired"
	CodeConfigInvalid       Code = "config_invalid"
	CodeTelemetryFailed     Code = "telemetry_write_failed"
	CodeDecisionFailed      Code = "decision_write_failed"
	CodeSessionQuarantined  Code = "session_quarantined"
	CodeInstructionFound    Code = "instruction_injection"
	CodeUnguardedCall       Code = "unguarded_call"
	CodeSpoolRefused        Code = "spool_refused"
	CodeManagedSettings     Code = "managed_settings_drop_in"
	CodeCLIWithoutOnFailure Code = "cli_predates_on_failure"
	// Counted through Health.Count: one generic counter each.
	CodeTranscriptTampered Code = "transcript_tampered"
	CodeForgedEvent        Code = "forged_event"
	CodeSessionOverBudget  Code = "session_over_budget"
	CodeRecordTampered     Code = "record_tampered"
	// Log only.
	CodeSessionTampered Code = "session_tampered"
	CodeSessionFlooding Code = "session_flooding"
)

// CodeInfo is what every code means and what to do about it.
type CodeInfo struct {
	Code     Code
	Severity Severity
	// Title says what the state is, in a line.
	Title string
	// Action says what to do.
	Action string
	// LogOnly codes mark daemon log lines; they never become a heartbeat warning.
	LogOnly bool
}

// codes is the registry, in the order deploy/REFERENCE.md lists them. It is never modified.
var codes = []CodeInfo{
	{CodeSessionUnhooked, SeverityError, "a live session does not carry our hook (its error is in the log)",
		"see the daemon log for each session's error (code session_unhooked)", false},
	{CodeSessionUnverified, SeverityWarning, "our hook was written into an already-running session and no event has come since",
		"ask the user to start a new Cowork task; a running session may not have reloaded its settings", false},
	{CodeHookedButSilent, SeverityError, "sessions hooked for over 15 minutes and not one event from any of them: Cowork's layout or mounts probably changed",
		"Cowork may have changed its session layout or mounts; check that tool calls in Cowork reach .claude/coworkbridge/events.jsonl", false},
	{CodeLayoutUnrecognised, SeverityWarning, "folders under a sessions root that do not fit the known layout",
		"Cowork may have changed its layout; report these paths to the coworkbridge maintainers", false},
	{CodeNoSessionsRoot, SeverityError, "none of the configured roots exists",
		"check that Claude Desktop is installed for this user, or correct sessions_roots", false},
	{CodeSessionsVolumeFull, SeverityError, "a sessions root's volume has under 16 MiB free: hooks cannot hand over calls, and in enforce deny every one; checked at every scan until it clears",
		"free disk space on that volume", false},
	{CodeWatchLimit, SeverityWarning, "some live sessions are kept hooked by the rescan only",
		"repairs may take up to rescan_interval; clean up old Cowork sessions", false},
	{CodeDecisionsUnconsumed, SeverityWarning, "decision files swept unread: hooks gave up before the daemon answered",
		"the daemon is too slow for decision_timeout; check its load and the decision latency", false},
	{CodeMalformedLines, SeverityWarning, "spool lines that could not be decoded",
		"a hook or the spool was damaged; in enforce mode those calls were denied", false},
	{CodeOversizedLines, SeverityWarning, "spool lines over max_line_bytes",
		"raise max_line_bytes if these were legitimate; in enforce mode they were denied", false},
	{CodeSettingsRepaired, SeverityWarning, "our hook was removed or disabled in a session and restored",
		"something in the session edits its settings; review the decision log for those sessions", false},
	{CodeConfigInvalid, SeverityError, "managed.json is invalid (running on the last good copy; or, with none, off, or failing closed when it asks for enforce), or its policy does not compile (running on the previous policy or the built-in rules)",
		"fix the file your MDM delivers, or the rule files and rule ids it names; 'coworkbridge validate FILE' lists every problem", false},
	{CodeTelemetryFailed, SeverityError, "decision-log writes failed (disk full, permissions)",
		"check free disk space and the permissions of the telemetry folder", false},
	{CodeDecisionFailed, SeverityError, "a decision or the alive lease could not be written into a session (its enforce hooks deny on timeout)",
		"enforce hooks in those sessions deny after their timeout; check the daemon log for the error (a link or a full disk)", false},
	{CodeSessionQuarantined, SeverityError, "something in the session tried to switch the guard off or hijack it; every call there is denied until ten minutes after the last attempt (the log's session_tampered lines say what)",
		"review the session's decision log records (rule coworkbridge.quarantine and the attempts before it); the quarantine lifts by itself once the daemon has repaired the session and no attempt has followed", false},
	{CodeInstructionFound, SeverityWarning, "an instruction or memory file of the session holds text the content rules flag, however it got there; coworkbridge never changes the file",
		"read the files named: text that tells the agent to hide things, claims approvals or sends secrets did not come from the user; coworkbridge never changes these files (with policy.quarantine_on_injection, enforce mode denies every call there until the text is gone)", false},
	{CodeUnguardedCall, SeverityError, "the CLI's transcript shows a tool call that ran with no event reaching the daemon, or despite an enforced deny",
		"review the decision log records with rule coworkbridge.unguarded-call; in enforce mode the sessions were quarantined", false},
	{CodeSpoolRefused, SeverityError, "a session's spool was a link, FIFO, folder or device: not read, taken away at once, the session quarantined",
		"something in the session replaced .claude/coworkbridge/events.jsonl; in enforce mode its calls are denied; review the session", false},
	{CodeManagedSettings, SeverityError, "the Claude Code managed-settings drop-in is missing, is not the one managed.json asks for (lockdown, MCP allow-list, minimum version), could be changed by someone other than root (it or its folders), or another managed-settings file the CLI merges with it weakens it (hooks off, lockdown switches undone, hooks, env or programs of its own, a wider MCP list)",
		"run `sudo coworkbridge install --managed-settings` (or your MDM's post-install policy) again; remove or correct any other managed-settings file `coworkbridge validate` names", false},
	{CodeCLIWithoutOnFailure, SeverityWarning, "a session's transcripts name a Claude Code older than " + claudehook.OnFailureSince + ", the first release known to honour onFailure: there a hook that is killed, hangs or crashes lets the call run instead of blocking it",
		"update Claude Desktop (it brings its Claude Code); managed.json's required_minimum_version makes the drop-in refuse older CLIs", false},
	{CodeTranscriptTampered, SeverityError, "a session's transcript was changed in a way the CLI never does (removed, renamed, replaced, truncated, rewritten, its time set back, or a file planted among them): the evidence of what ran there was edited",
		"review the session's record (coworkbridge.transcript-tampered); in enforce the session is quarantined", false},
	{CodeForgedEvent, SeverityError, "an event reached the daemon that no tool call of the session caused: its tool_use_id never appeared in the session's transcripts",
		"review the session's record (coworkbridge.forged-event); in enforce the session is quarantined", false},
	{CodeSessionOverBudget, SeverityWarning, "a session made the daemon keep more than its budget (calls awaiting their result, events awaiting their call, transcripts followed); the excess is dropped and reconciliation there is incomplete",
		"review the session: no ordinary session comes near the budget", false},
	{CodeRecordTampered, SeverityError, "the decision log was changed behind the daemon's back: the record it wrote last was cut or edited, or its file removed or replaced; recorded as coworkbridge.record-tampered",
		"run 'coworkbridge report' on the log: it verifies the chain and names the first broken link; compare with the record heads in the daemon log's heartbeats, and find what could write the log folder", false},
	{CodeSessionTampered, SeverityWarning, "an attempt on the guard in a session: the log line says what was changed; repeated attempts quarantine the session",
		"review the session; the daemon has undone the change", true},
	{CodeSessionFlooding, SeverityWarning, "a session exceeded its decision-log budget; the excess is summarised, not logged line by line",
		"review the session: no agent's ordinary work makes ten calls a second for a minute", true},
}

// Codes lists every code, in deploy/REFERENCE.md's order.
func Codes() []CodeInfo { return slices.Clone(codes) }

// Info is what the code means; an unknown code is an error with no action, so that a typo shows.
func (c Code) Info() CodeInfo {
	if i := slices.IndexFunc(codes, func(ci CodeInfo) bool { return ci.Code == c }); i >= 0 {
		return codes[i]
	}
	return CodeInfo{Code: c, Severity: SeverityError, Title: "unknown code " + string(c)}
}
