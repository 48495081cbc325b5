package cbtest

import (
	"os"
	"testing"
)

// EnvShared, set to "require", makes a missing ../shared a failure instead of a skip: CI sets
// it, so a run that could not see the reference data and corpora cannot pass as a green run.
const EnvShared = "COWORKBRIDGE_SHARED"

// NoShared is what a test does when the project's shared folder (reference data, corpora) is not
// beside the checkout: it skips, saying where the data was looked for, or fails under
// COWORKBRIDGE_SHARED=require.
func NoShared(t testing.TB, what string, err error) {
	t.Helper()
	msg := what + " not found beside the checkout (../shared): " + err.Error() +
		"; clone the project's shared folder beside this one to run this test"
	if os.Getenv(EnvShared) == "require" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
