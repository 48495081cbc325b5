package report

import "testing"

// A count axis ends within one step of the largest bar, on a round step.
func TestACountAxisEndsWithinOneStepOfTheLargestBar(t *testing.T) {
	for v, want := range map[int64][2]int64{0: {1, 1}, 1: {1, 1}, 3: {3, 1}, 7: {8, 2}, 11: {12, 2}, 37: {40, 10}, 100: {100, 20}, 101: {120, 20}, 12345: {15000, 5000}} {
		top, step := niceMax(v)
		if top != want[0] || step != want[1] {
			t.Errorf("niceMax(%d) = %d by %d, want %d by %d", v, top, step, want[0], want[1])
		}
		if top < v || top-v >= step && v > 0 {
			t.Errorf("niceMax(%d) = %d: more than a step past the largest value", v, top)
		}
	}
}
