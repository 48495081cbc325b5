package privsep

import (
	"context"
	"log/slog"
	"os"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

func osFile(fd int) *os.File { return os.NewFile(uintptr(fd), "test-link") }

// nopRoot judges nothing and keeps nothing.
type nopRoot struct{}

func (nopRoot) Decide(context.Context, User, judgement.Call) judgement.Outcome {
	return judgement.Outcome{}
}
func (nopRoot) Refuse(User, judgement.Call, string, string) judgement.Outcome {
	return judgement.Outcome{}
}
func (nopRoot) InstructionFindings(User, string) []classifier.Verdict { return nil }
func (nopRoot) Record(User, []telemetry.Record, bool) error           { return nil }
func (nopRoot) Health(User, HealthNote)                               {}
func (nopRoot) Forget(User)                                           {}
func (nopRoot) Log(User, slog.Level, string, map[string]any)          {}
