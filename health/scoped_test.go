package health

import (
	"strings"
	"testing"
)

// A user of a shared Mac sees their own sessions, their counts and the warnings about them, and
// no path of another user's, whatever the machine-wide figures say.
func TestAScopedSnapshotShowsOneUsersSessionsAndNoOtherUsersPaths(t *testing.T) {
	const ada = "/Users/ada/Library/Application Support/Claude/local-agent-mode-sessions/a/o/local_ada"
	const bob = "/Users/bob/Library/Application Support/Claude/local-agent-mode-sessions/a/o/local_bob"
	s := Snapshot{
		Sessions: []Session{
			{ID: "local_ada", Dir: ada, Hooked: true, Events: 3, Denies: 1, Counts: map[Code]uint64{CodeMalformedLines: 2}, CLIVersions: []string{"2.1.332"}},
			{ID: "local_bob", Dir: bob, Hooked: true, Events: 40, Denies: 9, Asks: 4, Tampering: 1, CLIVersions: []string{"2.1.329"}},
		},
		Totals: Totals{Events: 43, Denies: 10, Asks: 4, WouldDenies: 7, Tampering: 1, SessionsDropped: 2},
		Today:  Today{Date: "2026-11-29", Events: 43},
		Scan: ScanReport{Roots: []string{"/Users/ada/Library/Application Support/Claude/local-agent-mode-sessions", "/Users/bob/Library/Application Support/Claude/local-agent-mode-sessions"},
			Unrecognised: []string{bob + "x"}, Sessions: 2, Live: 2},
		Warnings: []Warning{
			{Code: CodeSessionUnhooked, Message: "settings rewritten", Sessions: []string{"local_ada", "local_bob"}},
			{Code: CodeSessionUnhooked, Message: "held a hook", Sessions: []string{"local_bob"}},
			{Code: CodeSessionsVolumeFull, Message: "low space on " + bob + " (12 KiB free)"},
			{Code: CodeSessionsVolumeFull, Message: "low space on " + ada + " (12 KiB free)"},
			{Code: CodeConfigInvalid, Message: "managed.json: mode: \"on\" is not a mode"},
		},
		Record: &RecordHead{Log: "/var/log/coworkbridge/decisions.jsonl"},
	}
	got := s.Scoped(func(p string) bool { return strings.HasPrefix(p, "/Users/ada/") })
	if len(got.Sessions) != 1 || got.Sessions[0].ID != "local_ada" {
		t.Fatalf("sessions %+v, want ada's alone", got.Sessions)
	}
	if got.Counts.Live != 1 || got.Counts.Hooked != 1 || len(got.CLIVersions) != 1 || got.CLIVersions[0] != "2.1.332" {
		t.Errorf("counts %+v %v, want ada's session's", got.Counts, got.CLIVersions)
	}
	if got.Totals.Events != 3 || got.Totals.Denies != 1 || got.Totals.Asks != 0 || got.Totals.WouldDenies != 0 ||
		got.Totals.SessionsDropped != 0 || got.Totals.Tampering != 0 || got.Totals.Counts[CodeMalformedLines] != 2 {
		t.Errorf("totals %+v, want ada's session's alone", got.Totals)
	}
	if got.Today.Events != 0 || got.Record != nil {
		t.Errorf("machine-wide figures shown: today %+v, record %+v", got.Today, got.Record)
	}
	if len(got.Scan.Roots) != 1 || len(got.Scan.Unrecognised) != 0 || got.Scan.Sessions != 1 {
		t.Errorf("scan %+v, want ada's root alone", got.Scan)
	}
	if len(got.Warnings) != 4 {
		t.Fatalf("warnings %+v, want the four that concern ada or the machine", got.Warnings)
	}
	for _, w := range got.Warnings {
		if strings.Contains(w.Message, "bob") || strings.Contains(strings.Join(w.Sessions, ","), "bob") {
			t.Errorf("another user's session or path shown: %+v", w)
		}
	}
	if !strings.Contains(got.Warnings[1].Message, "another user") || !strings.Contains(got.Warnings[2].Message, ada) {
		t.Errorf("the path of ada's own warning hidden, or bob's shown: %q / %q", got.Warnings[1].Message, got.Warnings[2].Message)
	}
	if len(s.Sessions) != 2 || len(s.Warnings[0].Sessions) != 2 {
		t.Error("Scoped changed the snapshot it was given")
	}
}
