package session

import (
	"testing"
	"time"
)

func TestRemovalsHoldWritesBackWhileARemovalRuns(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		saw  []removalAt   // removals, at offsets from the start
		at   time.Duration // when Wait is asked
		want time.Duration
	}{
		{name: "nothing removed", at: 0, want: 0},
		{name: "just after a removal in .claude", saw: seen(0, ".claude/settings.json"), at: 100 * ms, want: RemovalQuiet - 100*ms},
		{name: "after the quiet gap", saw: seen(0, ".claude/settings.json"), at: RemovalQuiet, want: 0},
		{name: "a burst keeps holding", saw: seen(0, ".claude/a", 400*ms, ".claude/b", 800*ms, ".claude/c"), at: 900 * ms, want: 400 * ms},
		{name: "the agent's removals hold at most RemovalHold", saw: every(250*ms, 6*time.Second, ".claude/x"), at: RemovalHold + 300*ms, want: 0},
		{name: "removals out of the agent's reach hold as long as they last", saw: append(seen(0, "audit.jsonl"), every(250*ms, 6*time.Second, ".claude/x")...), at: RemovalHold + 300*ms, want: 450 * ms},
		{name: "the metadata file going is out of reach", saw: append(seen(0, MetadataName), every(250*ms, 6*time.Second, "outputs/x")...), at: 5900 * ms, want: 350 * ms},
		{name: "the session folder itself", saw: seen(0, ""), at: 10 * ms, want: RemovalQuiet - 10*ms},
		{name: "a restarted burst of the agent's removals holds no longer", saw: append(every(250*ms, 4*time.Second, ".claude/x"), between(4600*ms, 250*ms, 9*time.Second, ".claude/y")...), at: 6 * time.Second, want: 0},
		{name: "a later burst of the agent's removals does not hold at all", saw: append(seen(0, ".claude/x"), seen(time.Minute, ".claude/y")...), at: time.Minute + 10*ms, want: 0},
		{name: "a later deletion of the session still holds", saw: append(seen(0, ".claude/x"), seen(time.Minute, ".claude/y", time.Minute+100*ms, "outputs")...), at: time.Minute + 200*ms, want: RemovalQuiet - 100*ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Unix(1000, 0)
			now := start
			r := NewRemovals(func() time.Time { return now })
			for _, s := range tt.saw {
				if s.at > tt.at {
					break
				}
				now = start.Add(s.at)
				r.Saw("/s/local_a", s.rel)
			}
			now = start.Add(tt.at)
			if got := r.Wait("/s/local_a"); got != tt.want {
				t.Errorf("Wait = %v, want %v", got, tt.want)
			}
			if got := r.Wait("/s/local_b"); got != 0 {
				t.Errorf("another session held for %v", got)
			}
		})
	}
}

type removalAt = struct {
	at  time.Duration
	rel string
}

func seen(args ...any) []removalAt {
	var r []removalAt
	for i := 0; i < len(args); i += 2 {
		at, ok := args[i].(time.Duration)
		if !ok {
			at = time.Duration(args[i].(int)) // an untyped 0
		}
		r = append(r, removalAt{at, args[i+1].(string)})
	}
	return r
}

func every(step, until time.Duration, rel string) []removalAt {
	var r []removalAt
	for at := step; at < until; at += step {
		r = append(r, removalAt{at, rel})
	}
	return r
}

func between(from, step, until time.Duration, rel string) []removalAt {
	var r []removalAt
	for at := from; at < until; at += step {
		r = append(r, removalAt{at, rel})
	}
	return r
}

// The burst pattern of the attack: removals in .claude in bursts that stop just long enough to
// end and start again, for 40 s. The writes they hold back are held for RemovalHold in all.
func TestRestartingBurstsOfTheAgentsRemovalsHoldOnlyOnce(t *testing.T) {
	start := time.Unix(1000, 0)
	now := start
	r := NewRemovals(func() time.Time { return now })
	const step = 10 * time.Millisecond
	held := time.Duration(0)
	for at := time.Duration(0); at < 40*time.Second; at += step {
		now = start.Add(at)
		if cycle := at % (RemovalHold + RemovalQuiet + 50*time.Millisecond); cycle < RemovalHold && cycle%(100*time.Millisecond) == 0 {
			r.Saw("/s/local_a", ".claude/projects")
		}
		if r.Wait("/s/local_a") > 0 {
			held += step
		}
	}
	if held > RemovalHold {
		t.Errorf("held %v of 40s, want at most %v", held, RemovalHold)
	}
}

func TestForgetDropsTheSessionsHold(t *testing.T) {
	now := time.Unix(1000, 0)
	r := NewRemovals(func() time.Time { return now })
	r.Saw("/s/local_a", ".claude/x")
	now = now.Add(time.Minute)
	r.Forget("/s/local_a")
	r.Saw("/s/local_a", ".claude/x")
	if got := r.Wait("/s/local_a"); got != RemovalQuiet {
		t.Errorf("a new session of the same name waits %v, want %v", got, RemovalQuiet)
	}
}

func TestAgentReachable(t *testing.T) {
	for rel, want := range map[string]bool{
		".claude/settings.json": true, ".claude/coworkbridge/decisions": true, "outputs/a/b": true, "uploads/f": true,
		".claude": false, "outputs": false, "audit.jsonl": false, "": false, MetadataName: false, "other/x": false,
	} {
		if got := agentReachable(rel); got != want {
			t.Errorf("agentReachable(%q) = %v, want %v", rel, got, want)
		}
	}
}

func TestRemovalsForgetFinishedBursts(t *testing.T) {
	now := time.Unix(1000, 0)
	r := NewRemovals(func() time.Time { return now })
	for i := range 1000 {
		r.Saw(string(rune('a'+i%26))+string(rune(i)), ".claude/x")
		now = now.Add(RemovalQuiet)
	}
	if n := len(r.bursts); n > 65 {
		t.Errorf("%d bursts kept after they ended", n)
	}
}

func TestRemovalSign(t *testing.T) {
	for rel, want := range map[string]bool{
		".claude/settings.json": true, ".claude/coworkbridge": true, ".claude/coworkbridge/decisions": true, ".claude/projects": true,
		"outputs": true, "audit.jsonl": true, MetadataName: true, "": true,
		".claude/.claude.json.lock": false, ".claude/todos/x.json": false, "outputs/report.md": false,
	} {
		if got := RemovalSign(rel); got != want {
			t.Errorf("RemovalSign(%q) = %v, want %v", rel, got, want)
		}
	}
}
