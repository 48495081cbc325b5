package lane

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
)

// FuzzJudgeLine feeds arbitrary spool lines to the pipeline's per-line step in enforce mode. It
// must never panic, never write a file whose name is not a valid request id, always produce a
// record with a decision, and answer a waiting hook whose rid it can read.
func FuzzJudgeLine(f *testing.F) {
	for _, seed := range []string{
		envelope("0123456789abcdef0123456789abcdef", "enforce", "Bash", bash("rm -rf ~")),
		envelope("0123456789abcdef0123456789abcdef", "observe", "Read", `{"file_path":"~/.ssh/id_rsa"}`),
		`{"v":1,"rid":"0123456789abcdef0123456789abcdef","mode":"enforce","event":null}`,
		`{"v":1,"rid":"0123456789abcdef0123456789abcdef","mode":"enforce","event":{"tool_na`,
		`{"v":1,"rid":"../../../../etc/passwd","mode":"enforce","event":{"tool_name":"Bash"}}`,
		`{"tool_name":"Bash","tool_input":{"command":"ls"}}`,
		`{"v":2}`, `null`, ``, "\x00\xff",
	} {
		f.Add([]byte(seed), false)
	}
	lf := newLane(f, managedconfig.Enforce)
	s, err := session.Open(lf.dir)
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	decisionsDir := filepath.Join(lf.dir, ".claude", "coworkbridge", "decisions")
	f.Fuzz(func(t *testing.T, data []byte, oversized bool) {
		l := spool.Line{Data: data, Size: int64(len(data))}
		if oversized {
			l = spool.Line{Oversized: true, Head: data[:min(len(data), 256)], Size: 1 << 20}
		}
		lf.lane = New(lf.env, lf.dir, "") // each input meets a session of its own
		o := lf.lane.judge(context.Background(), source{s, judgement.Spool}, lf.pol, l, time.Now())
		if o.skip {
			t.Fatal("nothing was recorded before, so nothing may be skipped")
		}
		switch claudehook.Decision(o.rec.Decision) {
		case claudehook.Allow, claudehook.Ask, claudehook.Deny:
		default:
			t.Fatalf("record without a decision: %+v", o.rec)
		}
		entries, _ := os.ReadDir(decisionsDir)
		for _, e := range entries {
			rid := strings.TrimSuffix(e.Name(), ".json")
			if !claudehook.ValidRID(rid) || e.Name() != rid+".json" {
				t.Fatalf("wrote %q", e.Name())
			}
			os.Remove(filepath.Join(decisionsDir, e.Name()))
		}
		if rid, waiting := waitingHook(data[:min(len(data), 256)]); waiting && o.rec.RID == rid && len(entries) == 0 {
			t.Fatalf("hook %s waits but got no decision", rid)
		}
		if o.rec.Rule == ruleid.Malformed || o.rec.Rule == ruleid.Oversized {
			if o.rec.Decision != claudehook.Deny {
				t.Fatalf("a line no rule could judge is not a deny: %+v", o.rec)
			}
		}
	})
}
