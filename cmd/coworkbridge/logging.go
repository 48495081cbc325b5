package main

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/coworkbridge/coworkbridge/telemetry"
	"github.com/lmittmann/tint"
)

// newLogger logs in colour for a person at a terminal and as JSON lines otherwise (launchd sends
// stderr to a file that log shippers read). The level can change while running. Secrets in what
// it logs are redacted as in the decision log.
func newLogger(w io.Writer, level *slog.LevelVar) *slog.Logger {
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		return slog.New(tint.NewTextHandler(w, &tint.Options{Level: level, TimeFormat: time.TimeOnly, ReplaceAttr: telemetry.RedactLogAttr}))
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: telemetry.RedactLogAttr}))
}
