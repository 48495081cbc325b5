package cadence

import "testing"

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
	var want []int
	for r := FirstRest; r < MaxRest; r *= 2 {
		want = append(want, r)
	}
	want = append(want, MaxRest, MaxRest)
	if len(want) < 4 || want[1] != 2*FirstRest {
		t.Fatalf("rests %v: want at least one doubling before the longest", want)
	}
	rescans, longestAt := 0, -1
	for i, w := range want {
		if got := s.Longest(); got < w {
			t.Errorf("look %d: Longest %d, less than the rest to come (%d)", i, got, w)
		}
		if w == MaxRest && longestAt < 0 {
			longestAt = rescans
		}
		got := restOf(&s) + 1
		if got != w {
			t.Fatalf("look %d: the session was looked at again after %d rescans, want %d", i, got, w)
		}
		rescans += got
		s.Looked(true)
	}
	if longestAt != ToLongest() {
		t.Errorf("the session came to its longest rest %d rescans after it was first found calm; ToLongest says %d", longestAt, ToLongest())
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
		var s Schedule
		for _, calm := range history {
			s.Looked(calm)
			restOf(&s)
		}
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
