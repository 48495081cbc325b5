package plants

import (
	"fmt"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/ruleid"
)

func TestADecisionWeNotedIsOursAndAnyOtherIsASuspect(t *testing.T) {
	var w Watch
	now := time.Now()
	w.Ours("aaaa", now)
	if w.DecisionAppeared("aaaa") {
		t.Error("our own decision was taken for a forgery")
	}
	if !w.DecisionAppeared("bbbb") {
		t.Error("a decision we did not write was not a suspect")
	}
	w.CheckLease()
	found, lease := w.Take(now)
	if len(found) != 1 || found[0].RID != "bbbb" || found[0].Rule != ruleid.ForgedDecision || !lease {
		t.Fatalf("took %+v, lease %v", found, lease)
	}
	if found, lease = w.Take(now); len(found) != 0 || lease {
		t.Errorf("taken twice: %+v %v", found, lease)
	}
	w.DecisionGone("aaaa") // the hook took it: a decision at that id again is not ours
	if !w.DecisionAppeared("aaaa") {
		t.Error("a decision reappearing after ours was taken is not ours")
	}
}

func TestOurDecisionsAreForgottenWhenTheirRemovalIsNeverSeen(t *testing.T) {
	var w Watch
	now := time.Now()
	w.Ours("aaaa", now)
	w.Take(now.Add(oursKeep + time.Second))
	if !w.DecisionAppeared("aaaa") {
		t.Error("a decision noted long ago is still taken for ours")
	}
}

func TestRIDsRememberTheLastOnesOnly(t *testing.T) {
	var r RIDs
	for i := range ridsKept + 10 {
		r.Add(fmt.Sprintf("%032x", i))
	}
	if r.Has(fmt.Sprintf("%032x", 5)) || !r.Has(fmt.Sprintf("%032x", ridsKept+9)) || !r.Has(fmt.Sprintf("%032x", 10)) {
		t.Error("the set does not hold exactly the last ridsKept ids")
	}
}

// A flood of forged decisions between two Takes is kept to a bound and counted past it.
func TestAttemptsPastTheBoundAreCountedAsOne(t *testing.T) {
	var w Watch
	for i := range maxSuspects + 44 {
		w.DecisionAppeared(fmt.Sprintf("%032x", i))
	}
	before := w.Footprint()
	found, _ := w.Take(time.Now())
	if len(found) != maxSuspects+1 || found[maxSuspects].What != "44 more attempts like these, not recorded one by one" {
		t.Fatalf("%d suspects taken, last %+v", len(found), found[len(found)-1])
	}
	if before > 128<<10 || w.Footprint() != 0 {
		t.Errorf("footprint %d before the take, %d after", before, w.Footprint())
	}
}
