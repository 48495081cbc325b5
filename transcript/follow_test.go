package transcript

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
)

// memPositions is a Positions in memory.
type memPositions map[string]spool.Position

func (m memPositions) Get(n string) (spool.Position, bool) { p, ok := m[n]; return p, ok }
func (m memPositions) Set(n string, p spool.Position)      { m[n] = p }
func (m memPositions) Forget(n string)                     { delete(m, n) }
func (m memPositions) Names() []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func sessionWith(t testing.TB) (*session.Session, string) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".claude", "projects", "-slug", "abc.jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, p
}

func collect(f *Follower, s *session.Session) ([]string, Report) {
	var lines []string
	rep := f.Follow(s, func(_ string, l []byte) { lines = append(lines, string(l)) })
	return lines, rep
}

func TestTheFollowerReadsEachLineOnceAcrossRestarts(t *testing.T) {
	s, p := sessionWith(t)
	pos := memPositions{}
	f := NewFollower(pos, 1<<20, time.Now().Add(-time.Hour))
	os.WriteFile(p, []byte("one\ntwo\nthr"), 0o600)
	lines, rep := collect(f, s)
	if !slices.Equal(lines, []string{"one", "two"}) || len(rep.Tampers) != 0 || rep.Files != 1 {
		t.Fatalf("first look: %q %+v", lines, rep)
	}
	fh, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	fh.WriteString("ee\nfour\n")
	fh.Close()
	again := NewFollower(pos, 1<<20, time.Now()) // a restarted daemon, on the persisted positions
	if lines, rep = collect(again, s); !slices.Equal(lines, []string{"three", "four"}) || len(rep.Tampers) != 0 {
		t.Errorf("after the restart: %q %+v", lines, rep)
	}
}

func TestAFileFoundAtTheFirstLookAndWrittenBeforeIsReadFromItsEnd(t *testing.T) {
	s, p := sessionWith(t)
	os.WriteFile(p, []byte("old\n"), 0o600)
	past := time.Now().Add(-time.Hour)
	os.Chtimes(p, past, past)
	f := NewFollower(memPositions{}, 1<<20, time.Now())
	if lines, _ := collect(f, s); len(lines) != 0 {
		t.Errorf("history read: %q", lines)
	}
	// A file that appears later is read whole, whatever its time says.
	later := filepath.Join(filepath.Dir(p), "def.jsonl")
	os.WriteFile(later, []byte("new\n"), 0o600)
	os.Chtimes(later, past, past)
	if lines, _ := collect(f, s); !slices.Equal(lines, []string{"new"}) {
		t.Errorf("later file: %q", lines)
	}
}

func TestCheckKnowsTheNamesTheCLIWrites(t *testing.T) {
	for name, ok := range map[string]bool{
		Projects + "/-slug/abc.jsonl":                        true,
		Projects + "/-slug/abc/subagents/agent-a1.jsonl":     true,
		Projects + "/-slug/abc/subagents/x/agent-a1.jsonl":   true,
		Projects + "/-slug/abc/notes/x.jsonl":                false,
		Projects + "/abc.jsonl":                              false,
		".claude/elsewhere/-slug/abc.jsonl":                  false,
		Projects + "/-slug/abc/subagents/not-an-agent.jsonl": false,
	} {
		if got := Check(name) == ""; got != ok {
			t.Errorf("Check(%s) = %q", name, Check(name))
		}
	}
}

// FuzzFollower feeds arbitrary content, appended in two parts, through the follower: it never
// panics, never reports tampering for appends, and hands over exactly the complete lines.
func FuzzFollower(f *testing.F) {
	f.Add([]byte("a\nb\n"), []byte("c\n"))
	f.Add([]byte(""), []byte("\n\n\n"))
	f.Add([]byte("no newline"), []byte(strings.Repeat("x", 70000)+"\n"))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		s, p := sessionWith(t)
		pos := memPositions{}
		fl := NewFollower(pos, 1<<16, time.Now().Add(-time.Hour))
		os.WriteFile(p, first, 0o600)
		got, rep := collect(fl, s)
		fh, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		fh.Write(second)
		fh.Close()
		more, rep2 := collect(fl, s)
		got = append(got, more...)
		if len(rep.Tampers)+len(rep2.Tampers) != 0 {
			t.Fatalf("appends reported as tampering: %+v %+v", rep.Tampers, rep2.Tampers)
		}
		all := append(slices.Clone(first), second...)
		var want []string
		for i := bytes.IndexByte(all, '\n'); i >= 0; i = bytes.IndexByte(all, '\n') {
			if i <= 1<<16 {
				want = append(want, string(all[:i]))
			}
			all = all[i+1:]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("lines %q, want %q", got, want)
		}
	})
}

// A huge transcript is read in steps of a bounded size, each one's position kept: a daemon
// restarted between two steps resumes where the last one ended, and reads every line once.
func TestAHugeTranscriptIsReadInStepsThatSurviveARestart(t *testing.T) {
	s, p := sessionWith(t)
	var want []string
	var data []byte
	for i := range 10 {
		line := fmt.Sprintf("%d-%s", i, strings.Repeat("x", 1000))
		want = append(want, line)
		data = append(append(data, line...), '\n')
	}
	os.WriteFile(p, data, 0o600)
	pos := memPositions{}
	var got []string
	for look := 0; ; look++ {
		f := NewFollower(pos, 1<<20, time.Now().Add(-time.Hour)) // restarted before every step
		f.passBytes = 3000
		lines, rep := collect(f, s)
		if len(lines) > 3 {
			t.Fatalf("look %d read %d lines, over its bound", look, len(lines))
		}
		got = append(got, lines...)
		if !rep.More {
			break
		}
		if look > 10 {
			t.Fatal("the reading never ends")
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("read %d lines in steps, want the 10 once each in order", len(got))
	}
}

// A transcript renamed to a name no transcript has (x.jsonl.old) is reported and followed there
// by its identity: the call written just before the rename is read, and so is what comes after.
// One removed is reported.
func TestATranscriptRenamedAwayIsReportedAndFollowedByIdentity(t *testing.T) {
	s, p := sessionWith(t)
	pos := memPositions{}
	f := NewFollower(pos, 1<<20, time.Now().Add(-time.Hour))
	os.WriteFile(p, []byte("one\n"), 0o600)
	if lines, _ := collect(f, s); !slices.Equal(lines, []string{"one"}) {
		t.Fatalf("first look: %q", lines)
	}
	fh, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	fh.WriteString("the held call\n")
	fh.Close()
	if err := os.Rename(p, p+".old"); err != nil {
		t.Fatal(err)
	}
	lines, rep := collect(f, s)
	if !slices.Equal(lines, []string{"the held call"}) {
		t.Fatalf("after the rename, read %q; want the line written before it", lines)
	}
	if len(rep.Tampers) == 0 || !strings.Contains(rep.Tampers[0].What, "renamed to") {
		t.Fatalf("the rename was not reported: %+v", rep.Tampers)
	}
	fh, _ = os.OpenFile(p+".old", os.O_WRONLY|os.O_APPEND, 0)
	fh.WriteString("later\n")
	fh.Close()
	if lines, rep = collect(f, s); !slices.Equal(lines, []string{"later"}) || len(rep.Tampers) != 0 {
		t.Fatalf("followed under its new name: %q %+v", lines, rep.Tampers)
	}
	os.Remove(p + ".old")
	if _, rep = collect(f, s); len(rep.Tampers) != 1 || !strings.Contains(rep.Tampers[0].What, "removed") {
		t.Fatalf("the removal was not reported: %+v", rep.Tampers)
	}
}
