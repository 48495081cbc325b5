// Package ruleid names the rules that are coworkbridge's own rather than the policy's: what a
// record says when the guard itself refused a call it could not judge, found an attempt on the
// guard, or summarised what it could not keep. Every such id is defined here and nowhere else, so
// that a reader of the decision log, the retention that keeps these records apart, and the policy
// that refuses to let an admin switch them off all agree on one list.
//
// It holds names only: which record carries which id, and what happens then, is the business of
// the packages that build the records (judgement) and act on them.
package ruleid

import "strings"

// Prefix starts every id of this package, and no rule of a policy.
const Prefix = "coworkbridge."

// A call refused before any rule could see it.
const (
	// Malformed: an event that could not be read.
	Malformed = "coworkbridge.malformed"
	// Oversized: an event larger than max_line_bytes.
	Oversized = "coworkbridge.oversized"
	// ClassifierError: the policy engine failed on the call (a panic, or its budget spent).
	ClassifierError = "coworkbridge.classifier-error"
	// DuplicateRID: a second spool line reused a request id (a forged line).
	DuplicateRID = "coworkbridge.duplicate-rid"
	// Quarantine: the session is quarantined, so every call of it is refused.
	Quarantine = "coworkbridge.quarantine"
	// ConfigInvalid: managed.json is broken and no good copy is known, so every call is refused.
	ConfigInvalid = "coworkbridge.config-invalid"
	// Hook: a host hook that could not judge the call at all (a deny with no record of its own).
	Hook = "coworkbridge.hook"
)

// Attempts on the guard, found in a session or in the record.
const (
	ForgedDecision = "coworkbridge.forged-decision"
	PlantedLease   = "coworkbridge.planted-lease"
	PlantedSpool   = "coworkbridge.planted-spool"
	Unguarded      = "coworkbridge.unguarded-call"
	ForgedEvent    = "coworkbridge.forged-event"
	// Unconfirmed: a spool event no transcript confirmed, in a session with none.
	Unconfirmed        = "coworkbridge.unconfirmed-event"
	TranscriptTampered = "coworkbridge.transcript-tampered"
	RecordTampered     = "coworkbridge.record-tampered"
	// SettingsChange and SettingsUnreadable: a settings change judged under lockdown.
	SettingsChange     = "coworkbridge.settings-change"
	SettingsUnreadable = "coworkbridge.settings-unreadable"
	// DropInOverridden: a call on the Mac reached the session's hook but not the managed-settings
	// drop-in's, which Claude Code runs first; something else holds the managed tier.
	DropInOverridden = "coworkbridge.drop-in-overridden"
)

// Flood: a summary of the records a session's decision-log budget left out.
const Flood = "coworkbridge.flood"

// Evicted: what a rotation of the decision log dropped of one session over its share of the log.
const Evicted = "coworkbridge.evicted"

// All is every id of this package, for the tests and the reference that list them.
func All() []string {
	return []string{Malformed, Oversized, ClassifierError, DuplicateRID, Quarantine, ConfigInvalid, Hook,
		ForgedDecision, PlantedLease, PlantedSpool, Unguarded, ForgedEvent, Unconfirmed, TranscriptTampered,
		RecordTampered, SettingsChange, SettingsUnreadable, DropInOverridden, Flood, Evicted}
}

// IsGuard reports whether id is one of coworkbridge's own rules rather than a policy's.
func IsGuard(id string) bool { return strings.HasPrefix(id, Prefix) }
