package daemon

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coworkbridge/coworkbridge/privsep"
)

// The loops that ask for the Mac's users on the same beat share one listing; a listing older
// than the window, or one that failed, is not shared.
func TestUsersListedOnceForTheLoopsThatAskTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls, fail := 0, false
		list := sharedListing(func() ([]privsep.User, error) {
			calls++
			if fail {
				return nil, errors.New("Directory Services did not answer")
			}
			return []privsep.User{{UID: 501, Name: "ada"}}, nil
		}, time.Second)
		a, _ := list()
		b, _ := list()
		if calls != 1 || len(a) != 1 || len(b) != 1 {
			t.Fatalf("two asks on one beat listed %d times (got %v, %v)", calls, a, b)
		}
		a[0].Name = "eve" // a caller's copy is its own
		if c, _ := list(); c[0].Name != "ada" {
			t.Errorf("one caller's change reached another: %v", c)
		}
		time.Sleep(time.Second)
		list()
		if calls != 2 {
			t.Errorf("an ask after the window listed %d times in all; want a new listing", calls)
		}
		time.Sleep(time.Second)
		fail = true
		if _, err := list(); err == nil {
			t.Error("a failed listing was hidden behind the last good one")
		}
		fail = false
		if us, err := list(); err != nil || len(us) != 1 || calls != 4 {
			t.Errorf("after a failure: %v, %v, %d listings; want a new one", us, err, calls)
		}
	})
}
