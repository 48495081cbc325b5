package cbtest

import (
	"testing"
	"time"
)

// Timeout is how long WaitFor waits: long enough for a loaded CI machine, short enough that a
// hang fails the test rather than the whole run.
const Timeout = 10 * time.Second

// WaitFor polls cond every few milliseconds until it holds, and fails t naming what it waited
// for when Timeout passes first. It is for real files, processes and watchers; logic that only
// depends on a clock is tested with testing/synctest instead.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	WaitForf(t, cond, func() string { return "timed out waiting for " + what })
}

// WaitForf is WaitFor whose failure message is made when it fails, to show the state then.
func WaitForf(t testing.TB, cond func() bool, msg func() string) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Eventually polls cond as WaitFor does and reports whether it held before Timeout, for a
// caller that says itself what failed.
func Eventually(cond func() bool) bool { return EventuallyWithin(Timeout, cond) }

// EventuallyWithin is Eventually for a wait known to take longer than Timeout (a whole daemon
// catching up after crashes).
func EventuallyWithin(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}
