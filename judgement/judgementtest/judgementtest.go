// Package judgementtest holds policy engines that fail, for tests that put them behind every door
// of the judgement: one that panics and one that runs past its budget. It is for tests only; no
// binary links it.
package judgementtest

import (
	"context"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/flow"
	"github.com/coworkbridge/coworkbridge/judgement"
)

// Panicking panics on every call it is asked to judge.
type Panicking struct{}

func (Panicking) EvaluateCall(context.Context, classifier.Call) classifier.Verdict {
	panic("judgementtest: an engine that fails")
}

func (Panicking) WithFlow(v classifier.Verdict, _ flow.State, _ classifier.Facets, _, _ string) (classifier.Verdict, []string) {
	return v, nil
}

func (Panicking) Effects(claudehook.Payload) []string { panic("judgementtest: an engine that fails") }

// Hanging works on every call until its budget ends, and then lets the call through: an engine
// that never decided.
type Hanging struct{}

func (Hanging) EvaluateCall(ctx context.Context, _ classifier.Call) classifier.Verdict {
	<-ctx.Done()
	return classifier.Verdict{Decision: claudehook.Allow}
}

func (Hanging) WithFlow(v classifier.Verdict, _ flow.State, _ classifier.Facets, _, _ string) (classifier.Verdict, []string) {
	return v, nil
}

func (Hanging) Effects(claudehook.Payload) []string { return nil }

// Engine is a failing engine with a name for a subtest.
type Engine struct {
	Name  string
	Rules judgement.Rules
}

// Failing are the engines every door is tried with: each must still give a deny and a record.
func Failing() []Engine {
	return []Engine{{"panics", Panicking{}}, {"hangs", Hanging{}}}
}
