package cadence

import (
	"fmt"
	"testing"
)

// restOf runs rescans until the schedule is due, and returns how many passed it over.
func restOf(s *Schedule) int {
	n := 0
	for s.Pass() {
		n++
		if n > 10*MaxRest {
			break
		}
	}
	return n
}

// A session found calm rests FirstRest rescans, then twice as long at each look that finds it calm
// again, up to MaxRest; a look that finds it not calm, or a stir, brings it back to every rescan.
func TestRestsDoubleUpToTheLongestAndEndAtAStir(t *testing.T) {
	var s Schedule
	if s.Pass() || s.Calm() {
		t.Fatal("a session never looked at is passed over")
	}
	s.Looked(true)
	want := []int{FirstRest, 2 * FirstRest, MaxRest, MaxRest}
	for i, w := range want {
		if got := s.Longest(); got < w {
			t.Errorf("look %d: Longest %d, less than the rest to come (%d)", i, got, w)
		}
		if got := restOf(&s) + 1; got != w {
			t.Fatalf("look %d: the session was looked at again after %d rescans, want %d", i, got, w)
		}
		s.Looked(true)
	}

	s.Pass()
	s.Stir()
	if s.Calm() || s.Resting() || s.Pass() {
		t.Fatal("a stirred session is passed over by the next rescan")
	}
	if got := s.Longest(); got != FirstRest {
		t.Errorf("Longest of a stirred session %d, want %d", got, FirstRest)
	}
	s.Looked(true)
	if got := restOf(&s) + 1; got != FirstRest {
		t.Errorf("a session calm again after a stir rested %d rescans, want %d", got, FirstRest)
	}

	s.Looked(false)
	if s.Pass() {
		t.Error("a session a look found not calm is passed over")
	}
	s.Looked(true)
	if got := restOf(&s) + 1; got != FirstRest {
		t.Errorf("a session calm again after a look that was not rested %d rescans, want %d", got, FirstRest)
	}
}

// Longest bounds every rest the look about to start can leave the session in, whatever it finds.
func TestLongestCoversTheRestALookCanLeave(t *testing.T) {
	for _, history := range [][]bool{{}, {true}, {true, true}, {true, true, true, true}, {true, false}, {false}} {
		var s, spread Schedule
		spread.Spread("local_7")
		for _, calm := range history {
			spread.Looked(calm)
			restOf(&spread)
		}
		for _, calm := range history {
			s.Looked(calm)
			restOf(&s)
		}
		for _, s := range []Schedule{s, spread} {
			bound := s.Longest()
			for _, calm := range []bool{true, false} {
				c := s
				c.Looked(calm)
				if got := restOf(&c) + 1; got > bound {
					t.Errorf("after %v, a look finding calm=%v left a rest of %d rescans, past Longest %d", history, calm, got, bound)
				}
			}
		}
	}
}

// Sessions tracked together and left calm are looked at on rescans spread evenly once they rest
// their longest, not all on the same one; each session's rests stay within MaxRest, only one of
// them shorter.
func TestSpreadSessionsRestTheirLongestOnDifferentRescans(t *testing.T) {
	const sessions = 1600
	phases := make([]int, MaxRest)
	for i := range sessions {
		var s Schedule
		s.Spread(fmt.Sprintf("/Users/ada/Library/Application Support/Claude/local-agent-mode-sessions/acct/org/local_%06d", i))
		s.Looked(true)
		var rests []int
		rescan := 0
		for len(rests) < 8 {
			rescan++
			if !s.Pass() {
				rests = append(rests, rescan)
				rescan = 0
				s.Looked(true)
			}
		}
		shorter := 0
		for j, r := range rests {
			if r > MaxRest {
				t.Fatalf("session %d: a rest of %d rescans, past MaxRest", i, r)
			}
			if j >= 3 && r < MaxRest {
				shorter++
			}
		}
		if shorter > 1 || rests[len(rests)-1] != MaxRest {
			t.Fatalf("session %d: rests %v, want one at most cut short and MaxRest after it", i, rests)
		}
		at := 0
		for _, r := range rests {
			at += r
		}
		phases[at%MaxRest]++
	}
	for phase, n := range phases {
		if n < sessions/MaxRest/2 || n > 2*sessions/MaxRest {
			t.Errorf("%d sessions looked at on rescans %d (mod %d), want about %d: %v", n, phase, MaxRest, sessions/MaxRest, phases)
		}
	}
}
