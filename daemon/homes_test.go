package daemon

import (
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/privsep"
)

// The people served are listed at most once per homesFor, however many sessions their workers
// report: each listing reads the user database for every user.
func TestTheServedHomesAreListedAtMostOncePerInterval(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	lists := 0
	people := []privsep.User{{Name: "a", Home: "/home/a"}}
	d := &Daemon{now: func() time.Time { return now }, users: func() ([]privsep.User, error) {
		lists++
		return people, nil
	}}
	for range 1000 {
		if !underAHome(d.homesFresh(), "/home/a/sessions") {
			t.Fatal("a root in a served home is not under a home")
		}
	}
	if lists != 1 {
		t.Fatalf("the people were listed %d times for 1000 questions within %v", lists, homesFor)
	}
	people = append(people, privsep.User{Name: "b", Home: "/home/b"})
	now = now.Add(homesFor)
	if !underAHome(d.homesFresh(), "/home/b/sessions") || lists != 2 {
		t.Errorf("a user added was not known %v later (%d listings)", homesFor, lists)
	}
	if underAHome(d.homesFresh(), "/home/bb/sessions") {
		t.Error("a folder beside a home, sharing its name's start, is under it")
	}
}
