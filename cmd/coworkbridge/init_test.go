package main

import (
	"testing"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
)

// initAllocBudget bounds what package initialisation allocates in the released binary, summed
// over every package: the drop-in runs a program of its own per call (coworkbridge-userhook, with
// a budget of its own), but `coworkbridge hook` still answers the drop-ins of earlier releases,
// and every command pays it. Allocations, not time, make the budget: they are the same on every
// machine, where the clock is not. 750 at the time of writing (2,094 before lazy expressions,
// namesets and tables laid out in the binary, 816 before internal/lazy); about 560 are other
// modules' (jsonschema, mvdan.cc/sh, html/template).
const initAllocBudget = 780

func TestPackageInitStaysWithinItsAllocationBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	cbtest.InitWithin(t, ".", "coworkbridge", initAllocBudget)
}
