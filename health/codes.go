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

// CodeInfo is what a code means and what to do about it.
type CodeInfo struct {
	Code     Code
	Severity Severity
	// Title says what the state is, in a line (the heartbeat's warning).
	Title string
	// Doc says what the state is for an admin's reference, with what the daemon does about it;
	// empty when Title says it all.
	Doc string
	// Action says what to do.
	Action string
	// LogOnly codes mark daemon log lines; they never become a heartbeat warning.
	LogOnly bool
}

// registry is every code, in definition order (deploy/REFERENCE.md's). Only define writes it,
// while the package is initialised; it is read-only after.
var registry []CodeInfo

func define(ci CodeInfo) Code {
	registry = append(registry, ci)
	return ci.Code
}

// The codes, each defined in one place: its name, severity, the line a heartbeat warning shows,
// the admins' reference text (deploy/REFERENCE.md's table is generated from it: go test ./health
// -run Reference -update) and what to do. Adding a code is adding a definition here.
var (
	CodeSessionUnhooked = define(CodeInfo{Code: "session_unhooked", Severity: SeverityError,
		Title:  "a live session does not carry our hook (its error is in the log)",
		Action: "see the daemon log for each session's error (code session_unhooked)"})
	CodeSessionUnverified = define(CodeInfo{Code: "session_unverified", Severity: SeverityWarning,
		Title:  "our hook was written into an already-running session and no event has come since",
		Action: "ask the user to start a new Cowork task; a running session may not have reloaded its settings"})
	CodeHookedButSilent = define(CodeInfo{Code: "hooked_but_silent", Severity: SeverityError,
		Title:  "sessions hooked for over 15 minutes and not one event from any of them: Cowork's layout or mounts probably changed",
		Action: "Cowork may have changed its session layout or mounts; check that tool calls in Cowork reach .claude/coworkbridge/events.jsonl"})
	CodeLayoutUnrecognised = define(CodeInfo{Code: "layout_unrecognised", Severity: SeverityWarning,
		Title:  "folders under a sessions root that do not fit the known layout",
		Action: "Cowork may have changed its layout; report these paths to the coworkbridge maintainers"})
	CodeNoSessionsRoot = define(CodeInfo{Code: "no_sessions_root", Severity: SeverityError,
		Title:  "none of the configured roots exists",
		Action: "check that Claude Desktop is installed for this user, or correct sessions_roots"})
	CodeSessionsVolumeFull = define(CodeInfo{Code: "sessions_volume_full", Severity: SeverityError,
		Title:  "a sessions root's volume has under 16 MiB free: hooks cannot hand over calls, and in enforce deny every one; checked at every scan until it clears",
		Action: "free disk space on that volume"})
	CodeWatchLimit = define(CodeInfo{Code: "watch_limit_reached", Severity: SeverityWarning,
		Title:  "some live sessions are kept hooked by the rescan only",
		Action: "repairs may take up to rescan_interval; clean up old Cowork sessions"})
	CodeDecisionsUnconsumed = define(CodeInfo{Code: "decisions_unconsumed", Severity: SeverityWarning,
		Title:  "decision files swept unread: hooks gave up before the daemon answered",
		Action: "the daemon is too slow for decision_timeout; check its load and the decision latency"})
	CodeMalformedLines = define(CodeInfo{Code: "malformed_lines", Severity: SeverityWarning,
		Title:  "spool lines that could not be decoded",
		Action: "a hook or the spool was damaged; in enforce mode those calls were denied"})
	CodeOversizedLines = define(CodeInfo{Code: "oversized_lines", Severity: SeverityWarning,
		Title:  "spool lines over max_line_bytes",
		Doc:    "spool lines over `max_line_bytes`",
		Action: "raise max_line_bytes if these were legitimate; in enforce mode they were denied"})
	CodeSettingsRepaired = define(CodeInfo{Code: "settings_repaired", Severity: SeverityWarning,
		Title:  "our hook was removed or disabled in a session and restored",
		Action: "something in the session edits its settings; review the decision log for those sessions"})
	CodeConfigInvalid = define(CodeInfo{Code: "config_invalid", Severity: SeverityError,
		Title:  "managed.json is invalid (running on the last good copy; or, with none, off, or failing closed when it asks for enforce), or its policy does not compile (running on the previous policy or the built-in rules)",
		Action: "fix the file your MDM delivers, or the rule files and rule ids it names; 'coworkbridge validate FILE' lists every problem"})
	CodeTelemetryFailed = define(CodeInfo{Code: "telemetry_write_failed", Severity: SeverityError,
		Title:  "decision-log writes failed (disk full, permissions)",
		Action: "check free disk space and the permissions of the telemetry folder"})
	CodeHostCallFailed = define(CodeInfo{Code: "host_call_failed", Severity: SeverityError,
		Title:  "the system daemon failed while serving a host hook's call (a panic, caught); the hook judged the call alone, which in enforce denies it",
		Action: "report the daemon log's host_call_failed lines (they name the uid and the failure) to the coworkbridge maintainers"})
	CodeWorkerRestarted = define(CodeInfo{Code: "worker_restarted", Severity: SeverityError,
		Title:  "in system mode, a user's worker (the process that does that user's session-folder work, as the user) ended and was started again; while it was down, that user's enforce hooks in the VM denied on timeout",
		Action: "status lists each worker with its last error; the daemon log's worker_restarted lines name the user and why it ended"})
	CodeDecisionFailed = define(CodeInfo{Code: "decision_write_failed", Severity: SeverityError,
		Title:  "a decision or the alive lease could not be written into a session (its enforce hooks deny on timeout)",
		Action: "enforce hooks in those sessions deny after their timeout; check the daemon log for the error (a link or a full disk)"})
	CodeSessionQuarantined = define(CodeInfo{Code: "session_quarantined", Severity: SeverityError,
		Title:  "something in the session tried to switch the guard off or hijack it; every call there is denied until ten minutes after the last attempt (the log's session_tampered lines say what)",
		Doc:    "something in the session tried to switch the guard off or hijack it; every call there is denied until ten minutes after the last attempt (the log's `session_tampered` lines say what)",
		Action: "review the session's decision log records (rule coworkbridge.quarantine and the attempts before it); the quarantine lifts by itself once the daemon has repaired the session and no attempt has followed"})
	CodeInstructionFound = define(CodeInfo{Code: "instruction_injection", Severity: SeverityWarning,
		Title:  "an instruction or memory file of the session holds text the content rules flag, however it got there; coworkbridge never changes the file",
		Doc:    "an instruction or memory file of the session (`.claude/CLAUDE.md`, skills, commands, memory, `CLAUDE.md`/`AGENTS.md` in its folders) holds text the content rules flag, however it got there; the warning names the file and the rules. coworkbridge never changes the file; with `policy.quarantine_on_injection` in enforce mode, the session is quarantined while the text stays",
		Action: "read the files named: text that tells the agent to hide things, claims approvals or sends secrets did not come from the user; coworkbridge never changes these files (with policy.quarantine_on_injection, enforce mode denies every call there until the text is gone)"})
	CodeUnguardedCall = define(CodeInfo{Code: "unguarded_call", Severity: SeverityError,
		Title:  "the CLI's transcript shows a tool call that ran with no event reaching the daemon, or despite an enforced deny",
		Doc:    "the CLI's transcript shows a tool call that ran with no event reaching the daemon, or despite an enforced deny (see THREATS.md); recorded as `coworkbridge.unguarded-call`, the session quarantined in enforce",
		Action: "review the decision log records with rule coworkbridge.unguarded-call; in enforce mode the sessions were quarantined"})
	CodeSpoolRefused = define(CodeInfo{Code: "spool_refused", Severity: SeverityError,
		Title:  "a session's spool was a link, FIFO, folder or device: not read, taken away at once, the session quarantined",
		Doc:    "a session's spool was a link, FIFO, folder or device: not read, taken away at once (never followed or opened), recorded as `coworkbridge.planted-spool`, the session quarantined",
		Action: "something in the session replaced .claude/coworkbridge/events.jsonl; in enforce mode its calls are denied; review the session"})
	CodeManagedSettings = define(CodeInfo{Code: "managed_settings_drop_in", Severity: SeverityError,
		Title:  "the Claude Code managed-settings drop-in is missing, is not the one managed.json asks for (lockdown, MCP allow-list, minimum version), could be changed by someone other than root (it or its folders), or another managed-settings file the CLI merges with it weakens it (hooks off, lockdown switches undone, hooks, env or programs of its own, a wider MCP list)",
		Doc:    "the managed-settings drop-in is not the one managed.json asks for, is not owned by root with mode 0644, its folder or the folder above it is not root's or is writable by others, another managed-settings file the CLI merges with it weakens it (`disableAllHooks`, a lockdown switch set to `false`, `hooks`, `env`, `allowedMcpServers`, or a key that starts a program), it is missing while managed.json asks for `lockdown` or `required_minimum_version`, or the hook program it runs (`coworkbridge-userhook`, in system mode `coworkbridge-hook`, beside the binary) is missing or not executable, which blocks every tool call on the Mac (the daemon checks at start, at each config change and each heartbeat; `coworkbridge validate` shows what differs and names the other file)",
		Action: "run `sudo coworkbridge install --managed-settings` (or your MDM's post-install policy) again; remove or correct any other managed-settings file `coworkbridge validate` names"})
	CodeDropInOverridden = define(CodeInfo{Code: "drop_in_overridden", Severity: SeverityError,
		Title:  "a session's calls on the Mac reach its own hook but not the managed-settings drop-in's, which Claude Code runs first: the drop-in is not in force there (server-managed settings from the organisation's console, or a cached copy of them, take its place)",
		Doc:    "a call of a host-loop session reached the session's own hook with no sign that the managed-settings drop-in's hook, which Claude Code runs first, saw it: the drop-in is not in force in that session, and neither is lockdown. Claude Code puts server-managed settings (the Claude.ai admin console's) in place of every endpoint-managed file, and a cached copy of them (`remote-settings.json` in the CLI's configuration folder) does the same when a fetch fails. Recorded as `coworkbridge.drop-in-overridden`, naming the cache when the session held one; the session's own hook still judges its calls, so the session is not quarantined",
		Action: "if your organisation sets Claude Code settings in the Claude.ai admin console, put coworkbridge's hook there too (`coworkbridge console-settings` prints it); otherwise look for a planted remote-settings.json (the record names it) and consider force_remote_settings_refresh under lockdown"})
	CodeCLIWithoutOnFailure = define(CodeInfo{Code: "cli_predates_on_failure", Severity: SeverityWarning,
		Title:  "a session's transcripts name a Claude Code older than " + claudehook.OnFailureSince + ", the first release known to honour onFailure: there a hook that is killed, hangs or crashes lets the call run instead of blocking it",
		Doc:    "a session's transcripts name a Claude Code older than " + claudehook.OnFailureSince + ", the first release known to honour `onFailure: \"block\"`: there a killed or hung hook lets the call run. `status` and the heartbeat list every CLI version seen (`cli_versions`)",
		Action: "update Claude Desktop (it brings its Claude Code); managed.json's required_minimum_version makes the drop-in refuse older CLIs"})
	CodeTranscriptTampered = define(CodeInfo{Code: "transcript_tampered", Severity: SeverityError,
		Title:  "a session's transcript was changed in a way the CLI never does (removed, renamed, replaced, truncated, rewritten, its time set back, or a file planted among them): the evidence of what ran there was edited",
		Doc:    "a session's transcript was changed in a way the CLI never does: removed, renamed, replaced, truncated, rewritten in place, its time set back, a link or hard link put at its name, or a file planted among the transcripts. Recorded as `coworkbridge.transcript-tampered`, the session quarantined in enforce; what the file holds since is not taken for evidence",
		Action: "review the session's record (coworkbridge.transcript-tampered); in enforce the session is quarantined"})
	CodeForgedEvent = define(CodeInfo{Code: "forged_event", Severity: SeverityError,
		Title:  "an event reached the daemon that no tool call of the session caused: its tool_use_id never appeared in the session's transcripts",
		Doc:    "an event reached the daemon that no tool call of the session caused: its `tool_use_id` never appeared in any of the session's transcripts within a minute. Recorded as `coworkbridge.forged-event`, the session quarantined in enforce",
		Action: "review the session's record (coworkbridge.forged-event); in enforce the session is quarantined"})
	CodeUnconfirmedEvent = define(CodeInfo{Code: "unconfirmed_events", Severity: SeverityWarning,
		Title:  "events of a session's spool that no transcript confirmed within a minute, in a session with no transcript: the CLI keeps none there, or something other than its hook wrote them",
		Doc:    "events of a session's spool that no transcript confirmed within a minute, in a session with no transcript: the CLI keeps none there (`--no-session-persistence`, a configuration folder elsewhere), or something other than its hook wrote them. Recorded as `coworkbridge.unconfirmed-event`; the session is not quarantined for it",
		Action: "review the session's record (coworkbridge.unconfirmed-event): its spool's calls cannot be told from forged lines while its CLI keeps no transcript"})
	CodeSessionOverBudget = define(CodeInfo{Code: "session_over_budget", Severity: SeverityWarning,
		Title:  "a session made the daemon keep more than its budget (calls awaiting their result, events awaiting their call, transcripts followed); the excess is dropped and reconciliation there is incomplete",
		Doc:    "a session made the daemon keep more than its budget: 1 MiB, counted by size, for everything the daemon keeps of it (events awaiting their call, calls awaiting their result, results awaiting their event, the transcripts followed (at most 1,000), recent request ids, the instruction scan, attempts on the guard awaiting their record, calls held over the log budget), where a real session keeps a few KiB. What does not fit is not kept, reconciliation there is incomplete, and memory stays bounded",
		Action: "review the session: no ordinary session comes near the budget"})
	CodeRecordTampered = define(CodeInfo{Code: "record_tampered", Severity: SeverityError,
		Title:  "the decision log was changed behind the daemon's back: the record it wrote last was cut or edited, or its file removed or replaced; recorded as coworkbridge.record-tampered",
		Doc:    "the decision log was changed behind the daemon's back: the record it wrote or saw last was cut or edited, or its file removed or replaced (checked before each of its writes and at each heartbeat). Recorded as `coworkbridge.record-tampered` in the log itself; `coworkbridge report` on the log names the first broken link",
		Action: "run 'coworkbridge report' on the log: it verifies the chain and names the first broken link; compare with the record heads in the daemon log's heartbeats, and find what could write the log folder"})
	CodeRecordLockHeld = define(CodeInfo{Code: "record_lock_held", Severity: SeverityError,
		Title:  "the decision log's lock was held by another process past the writer's wait; records wait for a retry (answers do not)",
		Doc:    "another process kept the decision log's lock (`<log>.lock`) longer than a writer waits (250 ms). The daemon retries its records with backoff and answers hooks without waiting for the log; a host hook drops its record into the drop folder for the daemon to import. In user mode the agent's identity can hold the lock; in system mode only root can",
		Action: "find the process holding the lock (lsof on the .lock file beside the decision log); in user mode consider system mode, where the lock is out of the agent's reach"})
	CodeSessionTampered = define(CodeInfo{Code: "session_tampered", Severity: SeverityWarning, LogOnly: true,
		Title:  "an attempt on the guard in a session: the log line says what was changed; repeated attempts quarantine the session",
		Doc:    "an attempt on the guard in a session, undone by the daemon; the line says what was changed, and repeated attempts quarantine the session",
		Action: "review the session; the daemon has undone the change"})
	CodeSessionFlooding = define(CodeInfo{Code: "session_flooding", Severity: SeverityWarning, LogOnly: true,
		Title:  "a session exceeded its decision-log budget; its routine excess is summarised, not logged line by line",
		Doc:    "a session exceeded its decision-log budget; its routine excess is summarised (counts by rule, the first and last inputs, redacted), not logged line by line, except the calls its transcripts then show, which are logged late; calls the rules would refuse or ask about, and flow steps, are still logged one by one",
		Action: "review the session: no agent's ordinary work makes ten calls a second for a minute"})
)

// Codes lists every code, in deploy/REFERENCE.md's order.
func Codes() []CodeInfo { return slices.Clone(registry) }

// Reference is the text of the code in deploy/REFERENCE.md's table.
func (ci CodeInfo) Reference() string {
	text := ci.Doc
	if text == "" {
		text = ci.Title
	}
	if ci.LogOnly {
		text = "(log lines only) " + text
	}
	return text
}

// Info is what the code means; an unknown code is an error with no action, so that a typo shows.
func (c Code) Info() CodeInfo {
	if i := slices.IndexFunc(registry, func(ci CodeInfo) bool { return ci.Code == c }); i >= 0 {
		return registry[i]
	}
	return CodeInfo{Code: c, Severity: SeverityError, Title: "unknown code " + string(c)}
}

// Known reports whether c is one of the defined codes: a count from a worker, which its user may
// have tampered with, is taken only for those.
func (c Code) Known() bool {
	return slices.ContainsFunc(registry, func(ci CodeInfo) bool { return ci.Code == c })
}
