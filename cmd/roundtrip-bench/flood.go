package main

import (
	"fmt"
	"os"
	"time"
)

// floodSpool appends forged lines to a session's spool at rate lines a second, in batches every
// 50 ms, until the returned function is called: the agent flooding its own spool that issue 70
// measures the other sessions' round trip beside. Each line names a call no CLI made (a harmless
// echo and, one line in twenty, a call the rules refuse), as a hostile agent would write them.
func floodSpool(spool string, rate int) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		n := 0
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			f, err := os.OpenFile(spool, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				continue
			}
			var buf []byte
			for range max(rate/20, 1) {
				cmd := fmt.Sprintf("echo noise %d", n)
				if n%20 == 0 {
					cmd = "rm -rf ~"
				}
				buf = fmt.Appendf(buf, `{"v":1,"rid":"f100d%027x","mode":"enforce","event":{"session_id":"s","cwd":"/x","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":%q},"tool_use_id":"toolu_forged_%d"}}`+"\n", n, cmd, n)
				n++
			}
			f.Write(buf)
			f.Close()
		}
	}()
	return func() { close(done); <-finished }
}
