package main

import (
	"runtime"
	"testing"
)

func TestTheDaemonRunsOnOneProcessorUnlessGOMAXPROCSIsSet(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		env  string
		want int
	}{
		{"", 1},
		{"3", 3}, // the variable was read at start-up; oneProc must leave that choice alone
	} {
		t.Setenv("GOMAXPROCS", tc.env)
		runtime.GOMAXPROCS(3)
		oneProc()
		if got := runtime.GOMAXPROCS(0); got != tc.want {
			t.Errorf("GOMAXPROCS=%q: the daemon runs on %d processors, want %d", tc.env, got, tc.want)
		}
	}
}
