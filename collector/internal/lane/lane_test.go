package lane

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

func TestAPassAnswersRecordsAndCommitsWhatTheSpoolHolds(t *testing.T) {
	f := newLane(t, managedconfig.Enforce)
	deny, allow := f.call("enforce", "rm -rf ~"), f.call("enforce", "ls")
	res := f.pass()
	if ok, denied := f.answered(deny); !ok || !denied {
		t.Fatal("the deny was not answered")
	}
	if ok, denied := f.answered(allow); !ok || denied {
		t.Fatal("the no objection was not answered")
	}
	recs := f.records()
	if len(recs) != 2 || recs[0].RID != deny || recs[0].Decision != claudehook.Deny || !recs[0].Enforced ||
		recs[0].Transport != telemetry.TransportSpool || recs[1].RID != allow {
		t.Fatalf("records %+v", recs)
	}
	if !res.Commit {
		t.Error("the offset moved and no commit was asked for")
	}
	if res = f.pass(); len(f.records()) != 2 {
		t.Errorf("a second pass recorded again: %d records", len(f.records()))
	}
}

func TestAPartialTrailingLineWaitsForItsNewline(t *testing.T) {
	f := newLane(t, managedconfig.Enforce)
	rid := f.nextRID()
	line := envelope(rid, "enforce", "Bash", bash("ls"))
	f.write(line[:40])
	f.pass()
	if ok, _ := f.answered(rid); ok || len(f.records()) != 0 {
		t.Fatal("a partial line was handled")
	}
	f.write(line[40:] + "\n")
	f.pass()
	if ok, _ := f.answered(rid); !ok {
		t.Fatal("the completed line was not answered")
	}
	if recs := f.records(); len(recs) != 1 || recs[0].RID != rid {
		t.Fatalf("the completed line was not handled once: %+v", recs)
	}
}

// A failing decision log (a full disk) is retried with backoff, however many events arrive
// meanwhile, and logged once when it starts failing and once when it recovers.
func TestAFailingDecisionLogIsRetriedWithBackoffAndNewEventsDoNotHastenIt(t *testing.T) {
	f := newLane(t, managedconfig.Observe)
	var logs strings.Builder
	f.env.Log = slogTo(&logs)
	f.sink.fail = 1 << 30
	f.call("observe", "ls")
	res := f.pass()
	if f.sink.attempts != 1 || !slices.Contains(res.Again, Again{After: time.Second, Reconcile: true, Channel: true}) {
		t.Fatalf("attempts %d, again %+v: want one attempt and a retry asked for in 1 s", f.sink.attempts, res.Again)
	}
	for range 50 { // events keep coming within the backoff
		f.call("observe", "ls")
		f.clock.advance(10 * time.Millisecond)
		f.pass()
	}
	if f.sink.attempts != 1 {
		t.Fatalf("%d write attempts within the backoff", f.sink.attempts)
	}
	f.clock.advance(time.Second)
	if res = f.pass(); f.sink.attempts != 2 || !slices.Contains(res.Again, Again{After: 2 * time.Second, Reconcile: true, Channel: true}) {
		t.Fatalf("attempts %d, again %+v: want a second attempt and the backoff doubled", f.sink.attempts, res.Again)
	}
	f.sink.fail = 0
	for f.clock.advance(2 * time.Second); len(f.records()) < 51; f.clock.advance(time.Second) {
		if f.pass(); f.sink.attempts > 100 {
			t.Fatalf("never recovered: %d records", len(f.records()))
		}
	}
	if recs := f.records(); len(recs) != 51 {
		t.Fatalf("%d records, want each of the 51 events once", len(recs))
	}
	if n := strings.Count(logs.String(), "cannot write the decision log"); n != 1 {
		t.Errorf("the failure was logged %d times, want once", n)
	}
	if !strings.Contains(logs.String(), "writable again") {
		t.Error("the recovery was not logged")
	}
}

// A quarantine the pass itself finds applies to the very next line of the same pass.
func TestALineReusingARequestIDQuarantinesTheRestOfThePass(t *testing.T) {
	f := newLane(t, managedconfig.Enforce)
	rid := f.call("enforce", "ls")
	f.pass()
	f.write(envelope(rid, "enforce", "Bash", bash("ls")) + "\n") // a forged second line
	next := f.call("enforce", "ls")
	f.pass()
	recs := f.records()
	if len(recs) != 3 || recs[1].Rule != ruleid.DuplicateRID || recs[2].Rule != ruleid.Quarantine {
		t.Fatalf("records %+v", recs)
	}
	if _, denied := f.answered(next); !denied || f.health.count("quarantined") != 1 {
		t.Errorf("the call after the forgery: denied %v, quarantines %d", denied, f.health.count("quarantined"))
	}
	f.clock.advance(f.env.Limits.QuarantineFor + time.Second)
	after := f.call("enforce", "ls")
	f.pass()
	if _, denied := f.answered(after); denied {
		t.Error("the quarantine did not lift once its period had passed")
	}
}

// A spool rotated aside is drained again, and removed, by a housekeeping pass the lane asks for
// once the grace for hooks that opened it has passed.
func TestARotatedSpoolAsksForAHousekeepingPassAfterTheGrace(t *testing.T) {
	f := newLane(t, managedconfig.Observe)
	f.env.Limits.RotateBytes = 100
	f.call("observe", "ls")
	res := f.housekeep()
	want := Again{After: f.env.Limits.RotateGrace + time.Second, Housekeep: true}
	if !slices.Contains(res.Again, want) {
		t.Fatalf("again %+v, want %+v", res.Again, want)
	}
	names := func() (n []string) {
		entries, _ := os.ReadDir(filepath.Dir(f.spool()))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), rotatedPrefix) {
				n = append(n, e.Name())
			}
		}
		return n
	}
	if len(names()) != 1 {
		t.Fatalf("rotated spools %v, want one", names())
	}
	f.clock.advance(want.After)
	f.housekeep()
	if len(names()) != 0 || len(f.records()) != 1 {
		t.Fatalf("after the grace: rotated %v, %d records", names(), len(f.records()))
	}
}

// While a removal goes on in the session, the lease and our folder are not put back; the lane
// asks once for the housekeeping to be tried again when the removal may be over.
func TestARemovalInProgressHoldsTheLeaseBackAndAsksOnceToLookAgain(t *testing.T) {
	f := newLane(t, managedconfig.Enforce)
	f.env.Removals.Saw(f.dir, session.SettingsFile)
	alive := filepath.Join(f.dir, filepath.FromSlash(session.AliveFile))
	var asked []Again
	for range 3 {
		asked = append(asked, f.housekeep().Again...)
	}
	if _, err := os.Stat(alive); err == nil {
		t.Fatal("a lease was written during a removal")
	}
	if len(asked) != 1 || !asked[0].Housekeep || asked[0].After <= 0 {
		t.Fatalf("asked for %+v, want one later housekeeping pass", asked)
	}
	f.clock.advance(session.RemovalHold + time.Minute)
	f.housekeep()
	if _, err := os.Stat(alive); err != nil {
		t.Fatalf("no lease once the removal had settled: %v", err)
	}
}

func TestThePassOfAChannelEventReadsTheSpoolOnlyWhenItMoved(t *testing.T) {
	f := newLane(t, managedconfig.Observe)
	f.call("observe", "ls")
	f.pass()
	s, err := session.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if f.lane.spooled.moved(s) {
		t.Error("the spool read to its end is seen as moved")
	}
	f.write(`{"v":1,"rid":"` + f.nextRID() + `"`) // no newline yet
	if !f.lane.spooled.moved(s) {
		t.Error("a line waiting for its newline is not seen")
	}
	os.Remove(f.spool())
	os.Symlink(t.TempDir(), f.spool())
	if !f.lane.spooled.moved(s) {
		t.Error("a link in place of the spool is not seen (the drain must refuse and replace it)")
	}
}

func TestAnUnreadDecisionIsCountedByTheSweep(t *testing.T) {
	f := newLane(t, managedconfig.Enforce)
	rid := f.call("enforce", "ls")
	f.pass()
	if ok, _ := f.answered(rid); !ok {
		t.Fatal("no answer")
	}
	f.clock.advance(time.Hour) // its hook gave up long ago
	old := f.clock.now.Add(-time.Hour)
	os.Chtimes(filepath.Join(f.dir, ".claude", "coworkbridge", "decisions", rid+".json"), old, old)
	f.housekeep()
	if f.health.count(string(health.CodeDecisionsUnconsumed)) != 1 {
		t.Errorf("unconsumed decisions counted %d, want 1", f.health.count(string(health.CodeDecisionsUnconsumed)))
	}
}

// Only our own rotated spools (events.r<digits>.jsonl) are drained and deleted: another file of
// digits in the folder is not ours to remove.
func TestRotatedSpoolNamesNeedTheirPrefix(t *testing.T) {
	for base, want := range map[string]bool{
		"events.r1700000000000000000.jsonl": true, "1700000000000000000.jsonl": false,
		"x1700000000000000000.jsonl": false, "events.r.jsonl": false, "events.r17.json": false,
	} {
		if _, got := rotatedAt(base); got != want {
			t.Errorf("rotatedAt(%q) = %v, want %v", base, got, want)
		}
	}
}

// A housekeeping pass that runs just after a removal took our folder, before the removal's
// events have reached the collector (the pass was queued earlier), must not put the folder back
// at once: the removal's last rmdir would fail. Not a removal after all (nothing else went), it
// is back at the pass the lane asks for once the hold has passed.
func TestOurFolderFoundGoneIsNotPutBackAtOnce(t *testing.T) {
	f := newLane(t, managedconfig.Enforce)
	f.housekeep() // made once
	bridge := filepath.Join(f.dir, filepath.FromSlash(session.BridgeDir))
	if err := os.RemoveAll(bridge); err != nil {
		t.Fatal(err)
	}
	res := f.housekeep()
	if _, err := os.Lstat(bridge); err == nil {
		t.Fatal("our folder was put back at once")
	}
	want := Again{After: session.RemovalQuiet, Housekeep: true}
	if !slices.Contains(res.Again, want) {
		t.Fatalf("asked for %+v, want %+v", res.Again, want)
	}
	f.clock.advance(want.After)
	f.housekeep()
	if _, err := os.Stat(filepath.Join(f.dir, filepath.FromSlash(session.AliveFile))); err != nil {
		t.Fatalf("our folder never came back: %v", err)
	}
}

// Prepare, before any pass, during a removal: the lease is put off, and the pass that writes it
// is asked for rather than left to the next rescan.
func TestAPrepareDuringARemovalAsksForTheLeaseLater(t *testing.T) {
	f := newLane(t, managedconfig.Enforce)
	f.env.Removals.Saw(f.dir, session.SettingsFile)
	res := f.lane.Prepare(f.clock.now.Add(time.Minute))
	if _, err := os.Stat(filepath.Join(f.dir, filepath.FromSlash(session.AliveFile))); err == nil {
		t.Fatal("a lease was written during a removal")
	}
	if len(res.Again) != 1 || !res.Again[0].Housekeep || res.Again[0].After <= 0 {
		t.Fatalf("asked for %+v, want one later housekeeping pass", res.Again)
	}
}

// A record joins Claude Code's own telemetry for the same call: its tool_use_id, the CLI's
// session id, the prompt it answers, and the CLI version the session's transcripts named.
func TestARecordCarriesWhatJoinsItToTheCLIsTelemetry(t *testing.T) {
	f := newLane(t, managedconfig.Observe)
	proj := filepath.Join(f.dir, ".claude", "projects", "p")
	os.MkdirAll(proj, 0o700)
	os.WriteFile(filepath.Join(proj, "t.jsonl"), []byte(`{"type":"user","version":"2.1.332","message":{"role":"user","content":"hi"}}`+"\n"), 0o600)
	f.clock.advance(time.Second)
	f.pass() // the transcript is followed from here; later lines are read
	os.WriteFile(filepath.Join(proj, "t.jsonl"), []byte(`{"type":"user","version":"2.1.332","message":{"role":"user","content":"hi"}}`+"\n"+
		`{"type":"assistant","version":"2.1.332","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}`+"\n"), 0o600)
	f.clock.advance(2 * time.Second)
	f.housekeep()
	rid := f.nextRID()
	f.write(`{"v":1,"rid":"` + rid + `","mode":"observe","event":{"session_id":"c4c0f2fd","prompt_id":"29b1a929","cwd":"/x","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_7"}}` + "\n")
	f.pass()
	recs := f.records()
	r := recs[len(recs)-1]
	if r.ToolUseID != "toolu_7" || r.CLISessionID != "c4c0f2fd" || r.PromptID != "29b1a929" || r.Session != "local_a" {
		t.Errorf("record %+v: want the call's ids beside Cowork's session", r)
	}
	if r.CLIVersion != "2.1.332" {
		t.Errorf("cli_version %q, want the version the transcript named", r.CLIVersion)
	}
}

// A housekeeping pass is Quiet only when it found the session as the last one left it and
// leaves nothing for time to settle: the scheduler puts a quiet session's next housekeeping off.
func TestAHousekeepingPassIsQuietOnlyWhenItFoundNothingAndLeavesNothingToTime(t *testing.T) {
	bridge := func(f *laneFixture, name string) string {
		return filepath.Join(f.dir, filepath.FromSlash(session.BridgeDir), name)
	}
	for _, tc := range []struct {
		name string
		stir func(t *testing.T, f *laneFixture)
	}{
		{"a call in the spool", func(t *testing.T, f *laneFixture) { f.call("enforce", "ls") }},
		{"half a line in the spool", func(t *testing.T, f *laneFixture) { f.write(`{"v":1,"rid":`) }},
		{"a decision not yet old enough to sweep", func(t *testing.T, f *laneFixture) {
			os.WriteFile(bridge(f, "decisions/"+f.nextRID()+".json"), []byte("{}"), 0o600)
		}},
		{"a rotated spool", func(t *testing.T, f *laneFixture) {
			os.WriteFile(bridge(f, rotatedPrefix+"1700000000000.jsonl"), nil, 0o600)
		}},
		{"an instruction file written", func(t *testing.T, f *laneFixture) {
			os.WriteFile(filepath.Join(f.dir, "CLAUDE.md"), []byte("be brief\n"), 0o600)
		}},
		{"an instruction file removed", func(t *testing.T, f *laneFixture) {
			os.Remove(filepath.Join(f.dir, ".claude", "CLAUDE.md"))
		}},
		{"a planted lease", func(t *testing.T, f *laneFixture) {
			tmp := bridge(f, ".plant")
			os.WriteFile(tmp, []byte("99999999999\n"), 0o600)
			if err := os.Rename(tmp, bridge(f, "alive")); err != nil {
				t.Fatal(err)
			}
		}},
		{"a quarantine", func(t *testing.T, f *laneFixture) { f.lane.Quarantine("disableAllHooks was set") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newLane(t, managedconfig.Enforce)
			os.WriteFile(filepath.Join(f.dir, ".claude", "CLAUDE.md"), []byte("use tabs\n"), 0o600)
			f.housekeep()
			f.clock.advance(time.Second)
			if res := f.housekeep(); !res.Quiet {
				t.Fatalf("a second housekeeping of a session left alone is not quiet: %+v", res)
			}
			tc.stir(t, f)
			f.clock.advance(time.Second)
			if res := f.housekeep(); res.Quiet {
				t.Errorf("the housekeeping after %s is quiet", tc.name)
			}
		})
	}
}

// A pass that is not housekeeping is never Quiet: it looked at too little to say.
func TestOnlyAHousekeepingPassIsQuiet(t *testing.T) {
	f := newLane(t, managedconfig.Enforce)
	f.housekeep()
	if res := f.pass(); res.Quiet {
		t.Error("a pass without housekeeping says the session is quiet")
	}
}
