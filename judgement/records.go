package judgement

import (
	"encoding/json"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// The records that are not a call the rules judged (Decide builds those), one constructor per
// kind. Each is a deny under one of coworkbridge's own rules (package ruleid), so that retention
// keeps it with the denies and asks, and a new field of the record is set in one place.

// Fault is the record of a call no rule could judge: unreadable, too large, or a forged line.
func Fault(door Door, now time.Time, session, rid string, mode managedconfig.Mode, rule, reason string) telemetry.Record {
	return guard(door, now, session, rid, mode, rule, reason)
}

// Flood is the record that summarises what a session's decision-log budget left out: summary
// says it, folded (when set) counts it by rule and quotes the first and last inputs, redacted.
func Flood(now time.Time, session string, mode managedconfig.Mode, summary string, folded json.RawMessage) telemetry.Record {
	rec := guard(Spool, now, session, "", mode, ruleid.Flood, summary)
	rec.Input = orNull(folded)
	return rec
}

// Attempt is the record of an attempt on the guard found in a session's bridge folder (a forged
// decision, a planted lease or spool).
func Attempt(now time.Time, session, rid string, mode managedconfig.Mode, rule, what string) telemetry.Record {
	return guard(Spool, now, session, rid, mode, rule, what)
}

// Finding is the record of what reconciling the transcripts found: a call that ran unguarded, an
// event no call caused, a transcript edited. preview is the call's input as the ledger kept it.
func Finding(now time.Time, session, rid string, mode managedconfig.Mode, tool string, preview json.RawMessage, rule, why string) telemetry.Record {
	rec := guard(Transcript, now, session, rid, mode, rule, why)
	rec.Tool, rec.Input = tool, orNull(preview)
	return rec
}

// Tampered is the record of the decision log cut or edited behind the daemon's back.
func Tampered(now time.Time, mode managedconfig.Mode, problem string) telemetry.Record {
	return guard(Log, now, "", "", mode, ruleid.RecordTampered, problem)
}

// SettingsChange is the record of a settings change the ConfigChange hook refused (or, in
// observe, would have), with what it found as the input.
func SettingsChange(now time.Time, session, rid string, mode managedconfig.Mode, c claudehook.ConfigChange, input json.RawMessage,
	rule, reason string, latency time.Duration) telemetry.Record {
	rec := guard(Hook, now, session, rid, mode, rule, reason)
	rec.Enforced, rec.Tool, rec.Input, rec.Cwd = mode == managedconfig.Enforce, claudehook.EventConfigChange, orNull(input), c.Cwd
	rec.CLISessionID, rec.LatencyUS = c.SessionID, latency.Microseconds()
	if rec.Session == "" {
		rec.Session = c.SessionID
	}
	return rec
}

func guard(door Door, now time.Time, session, rid string, mode managedconfig.Mode, rule, reason string) telemetry.Record {
	return telemetry.Record{TS: now, RID: rid, Session: session, Agent: door.Agent(), Transport: door.Transport(),
		Mode: string(mode), Input: json.RawMessage("null"), Decision: claudehook.Deny, Rule: rule, Reason: reason}
}
