package hookentry

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// BenchmarkHookScript measures one hook call as Claude Code makes it (sh -c, payload on stdin),
// per shell and mode. The enforce figure includes a responder that polls every millisecond,
// standing in for the daemon, so it is an upper bound on the script's own cost.
func BenchmarkHookScript(b *testing.B) {
	payload := []byte(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls -la"},"tool_use_id":"t"}`)
	for _, sh := range []string{"dash", "bash"} {
		path, err := exec.LookPath(sh)
		if err != nil {
			continue
		}
		for _, mode := range []managedconfig.Mode{managedconfig.Observe, managedconfig.Enforce} {
			b.Run(sh+"/"+string(mode), func(b *testing.B) {
				dir := filepath.Join(b.TempDir(), ".claude")
				s, _ := Script(ScriptParams{Mode: mode, DecisionTimeout: 10 * time.Second, MaxLineBytes: 4 << 20})
				if mode == managedconfig.Enforce {
					setAlive(b, dir, time.Now().Add(time.Hour))
					fakeDaemon(b, dir, func(envelope) []byte { return nil })
				}
				var lat []time.Duration
				b.ResetTimer()
				for range b.N {
					cmd := exec.Command(path, "-c", s)
					cmd.Env = []string{"CLAUDE_CONFIG_DIR=" + dir, "PATH=" + os.Getenv("PATH")}
					cmd.Stdin = bytes.NewReader(payload)
					start := time.Now()
					if out, err := cmd.Output(); err != nil || len(out) != 0 {
						b.Fatalf("hook: %v %q", err, out)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				cbtest.ReportPercentiles(b, lat)
			})
		}
	}
}
