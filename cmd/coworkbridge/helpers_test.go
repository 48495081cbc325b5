package main

import (
	"os"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// hookAnswer is the decision a hook printed: "" for nothing, "unreadable" for output Claude Code
// could not use.
func hookAnswer(out []byte) string {
	a, err := claudehook.ParseOutput(out)
	switch {
	case err != nil:
		return "unreadable"
	case a.Decision == claudehook.Allow:
		return ""
	}
	return string(a.Decision)
}

// readRecords reads every record of a decision log; lines that are not records are skipped.
func readRecords(path string) []telemetry.Record {
	recs, _ := telemetry.ReadFile(path)
	return recs
}

// hookCommand reads our hook's command from a settings.json file, "" when it is not there.
func hookCommand(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return hookentry.HookCommand(data)
}
