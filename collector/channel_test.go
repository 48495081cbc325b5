package collector

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

func (f *fixture) withChannel() string {
	root := filepath.Join(filepath.Dir(f.offsets), "channel")
	f.opts.ChannelRoot = root
	return filepath.Join(session.ChannelDir(root, filepath.Base(f.dir)), filepath.FromSlash(session.BridgeDir))
}

// handOver writes an event file as a hook on the Mac does.
func handOver(t *testing.T, chBridge, rid, line string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(chBridge, ".ev-"+rid), []byte("\n"+line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestHostChannelEventsAreJudgedAnsweredThereRecordedAndRemoved(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	ch := f.withChannel()
	f.start()
	alive, err := os.ReadFile(filepath.Join(ch, "alive"))
	if err != nil {
		t.Fatalf("no lease in the host channel: %v", err)
	}
	if n, _ := strconv.ParseInt(strings.TrimSpace(string(alive)), 10, 64); n <= time.Now().Unix() {
		t.Fatalf("host channel lease %q has lapsed", alive)
	}
	deny, allow := f.nextRID(), f.nextRID()
	handOver(t, ch, deny, envelope(deny, "enforce", "Bash", bash("rm -rf ~")))
	handOver(t, ch, allow, envelope(allow, "enforce", "Bash", bash("ls")))
	var got string
	cbtest.WaitForf(t, func() bool {
		data, err := os.ReadFile(filepath.Join(ch, "decisions", deny+".json"))
		got = string(data)
		return err == nil
	}, func() string { return "no decision in the host channel" })
	if decisionOf(t, got) != "deny" {
		t.Errorf("decision %q", got)
	}
	recs := f.waitRecords(2)
	for _, r := range recs {
		if r.Transport != telemetry.TransportChannel {
			t.Errorf("record %s transport %q", r.RID, r.Transport)
		}
	}
	cbtest.WaitForf(t, func() bool {
		left, _ := filepath.Glob(filepath.Join(ch, ".ev-*"))
		return len(left) == 0
	}, func() string { return "recorded event files are still in the channel" })
	if _, err := os.Stat(f.bridge(filepath.Join("decisions", deny+".json"))); err == nil {
		t.Error("a host-channel decision was also written into the session, where the agent can reach it")
	}
}

// answerWatch is the decision log of a fixture, checking at every write that the answers to the
// host channel's calls it names were not published before their records.
type answerWatch struct {
	*flakySink
	t       *testing.T
	ch      string
	written chan string
}

func (s *answerWatch) WriteBatch(rs []telemetry.Record) error {
	for _, r := range rs {
		if _, err := os.Lstat(filepath.Join(s.ch, "decisions", r.RID+".json")); err == nil && r.Decision == "allow" {
			s.t.Errorf("the answer to %s was published before its record was written", r.RID)
		}
	}
	if err := s.flakySink.WriteBatch(rs); err != nil {
		return err
	}
	for _, r := range rs {
		select {
		case s.written <- r.RID:
		default: // the test reads the first only; never hold up the collector
		}
	}
	return nil
}

func TestANoObjectionInTheHostChannelIsTheEventFileItselfOnceRecorded(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	ch := f.withChannel()
	sink := &answerWatch{flakySink: f.sink, t: t, ch: ch, written: make(chan string, 16)}
	f.opts.Sink = sink
	f.start()
	rid := f.nextRID()
	// Its identity is taken from the handle before the line is written: the daemon takes the
	// file as soon as its newline is there.
	file, err := os.OpenFile(filepath.Join(ch, ".ev-"+rid), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	before, err := file.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.WriteString("\n" + envelope(rid, "enforce", "Bash", bash("ls")) + "\n"); err != nil {
		t.Fatal(err)
	}
	file.Close()
	if got := <-sink.written; got != rid {
		t.Fatalf("recorded %s, want %s", got, rid)
	}
	var after os.FileInfo
	cbtest.WaitForf(t, func() bool {
		after, err = os.Stat(filepath.Join(ch, "decisions", rid+".json"))
		return err == nil
	}, func() string { return "no answer in the host channel" })
	if after.Size() != 0 || !os.SameFile(before, after) {
		t.Errorf("the answer is %d bytes, the event file itself: %v; want the event file, emptied", after.Size(), os.SameFile(before, after))
	}
	if _, err := os.Lstat(filepath.Join(ch, ".ev-"+rid)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the event file is still waiting: %v", err)
	}
	if r := f.waitRecords(1)[0]; r.LatencyUS <= 0 || !r.Enforced {
		t.Errorf("record = %+v, want its latency and enforced", r)
	}
}

func TestANoObjectionInTheHostChannelIsAnsweredEvenWhenTheLogFails(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	ch := f.withChannel()
	f.sink.fail = 1
	f.start()
	rid := f.nextRID()
	handOver(t, ch, rid, envelope(rid, "enforce", "Bash", bash("ls")))
	cbtest.WaitForf(t, func() bool {
		_, err := os.Stat(filepath.Join(ch, "decisions", rid+".json"))
		return err == nil
	}, func() string { return "the hook was left without an answer while the log failed" })
	assertEachOnce(t, f.waitRecords(1), []string{rid}) // the event file stayed, and was recorded on the retry
}

func TestAHostChannelEventStillBeingWrittenWaitsForItsNewline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, managedconfig.Observe)
		w := f.useFake()
		ch := f.withChannel()
		f.start()
		rid := f.nextRID()
		line := envelope(rid, "observe", "Bash", bash("ls"))
		p := filepath.Join(ch, ".ev-"+rid)
		os.WriteFile(p, []byte(line[:20]), 0o600)
		if !w.Change(p, fswatch.Create) {
			t.Fatal("the host channel is not watched")
		}
		synctest.Wait() // the collector has done all it will with the partial event
		if n := len(f.records()); n != 0 {
			t.Fatalf("a partial event was recorded (%d records)", n)
		}
		os.WriteFile(p, []byte(line+"\n"), 0o600)
		w.Change(p, fswatch.Write)
		if recs := f.waitRecords(1); recs[0].RID != rid || recs[0].Rule == ruleid.Malformed {
			t.Errorf("record %+v", recs[0])
		}
	})
}

func TestHostChannelEventsWaitingWhileTheDaemonWasDownAreRecordedOnceAtStart(t *testing.T) {
	f := newFixture(t, managedconfig.Observe)
	ch := f.withChannel()
	if err := os.MkdirAll(ch, 0o700); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		rid := f.nextRID()
		handOver(t, ch, rid, envelope(rid, "observe", "Bash", bash("echo "+rid)))
		old := time.Now().Add(-time.Hour) // older than any sweep age
		os.Chtimes(filepath.Join(ch, ".ev-"+rid), old, old)
	}
	f.start()
	f.waitRecords(5)
	f.stop()
	f.start() // a second start finds nothing left to record
	f.settle()
	if recs := f.records(); len(recs) != 5 {
		t.Fatalf("%d records, want each of the 5 events once: %s", len(recs), describe(recs))
	}
}

func TestAQuarantinedSessionHasEveryCallDeniedNamingCoworkbridge(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	f.start()
	f.c.Quarantine("local_a", "disableAllHooks was set")
	rid := f.nextRID()
	f.appendRaw(envelope(rid, "enforce", "Bash", bash("ls")) + "\n")
	got := f.decision(rid)
	if decisionOf(t, got) != "deny" || !strings.Contains(got, "quarantined because disableAllHooks was set") {
		t.Errorf("decision %q", got)
	}
	if recs := f.waitRecords(1); recs[0].Rule != ruleid.Quarantine {
		t.Errorf("record rule %q", recs[0].Rule)
	}
	if f.health.count("quarantined") != 1 {
		t.Error("health was not told")
	}
}

func TestAQuarantineLiftsOnceItsPeriodHasPassed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, managedconfig.Enforce)
		f.useFake()
		f.start()
		synctest.Wait()
		f.c.Quarantine("local_a", "x")
		time.Sleep(10*time.Minute - time.Second)
		rid := f.nextRID()
		f.appendRaw(envelope(rid, "enforce", "Bash", bash("ls")) + "\n")
		if got := f.decision(rid); decisionOf(t, got) != "deny" {
			t.Errorf("decision %q a second before the quarantine ends; want deny", got)
		}
		time.Sleep(2 * time.Second)
		rid = f.nextRID()
		f.appendRaw(envelope(rid, "enforce", "Bash", bash("ls")) + "\n")
		if got := f.decision(rid); got != "" {
			t.Errorf("decision %q after the quarantine ended; want no objection", got)
		}
	})
}

func describe(recs []telemetry.Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "\n\t%s %s %s %s", r.RID, r.Rule, r.Decision, r.Transport)
	}
	return b.String()
}

// An event file with a second name was made elsewhere and linked in, not handed over by a hook:
// it is refused and removed, never recorded as a host-channel call; a real one beside it is.
func TestAHostChannelEventWithASecondNameIsRefused(t *testing.T) {
	f := newFixture(t, managedconfig.Observe)
	ch := f.withChannel()
	f.start()
	forged, real := f.nextRID(), f.nextRID()
	elsewhere := filepath.Join(f.outside, "forged")
	if err := os.WriteFile(elsewhere, []byte(envelope(forged, "observe", "Bash", bash("ls"))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(elsewhere, filepath.Join(ch, ".ev-"+forged)); err != nil {
		t.Fatal(err)
	}
	handOver(t, ch, real, envelope(real, "observe", "Bash", bash("pwd")))
	recs := f.waitRecords(1)
	cbtest.WaitForf(t, func() bool {
		_, err := os.Lstat(filepath.Join(ch, ".ev-"+forged))
		return errors.Is(err, fs.ErrNotExist)
	}, func() string { return "the linked event file is still in the channel" })
	f.stop()
	for _, r := range f.records() {
		if r.RID == forged {
			t.Errorf("the linked event was recorded: %+v", r)
		}
	}
	if recs[0].RID != real {
		t.Errorf("recorded %s, want the real event %s", recs[0].RID, real)
	}
}

// Hooks in the VM stage their lines in a folder the daemon makes in the session; hooks on the
// Mac write their events in place in the host channel, which therefore has none.
func TestTheStagingFolderIsMadeInTheSessionAndNotInTheHostChannel(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	ch := f.withChannel()
	f.start()
	if fi, err := os.Lstat(f.bridge("staging")); err != nil || !fi.IsDir() {
		t.Errorf("no staging folder in the session: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(ch, "staging")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the host channel has a staging folder: %v", err)
	}
}
