// Command coworkbridge-hook is the host hook of system mode, as the system drop-in runs it for
// every Claude Code session on the Mac: it hands the call to the root daemon over its socket and
// prints the daemon's answer. It is a separate, small program because it runs before every tool
// call: it links no policy and initialises almost nothing, so that it starts about as fast as a Go
// program can.
//
// Whatever it cannot do itself it leaves to the full program beside it (coworkbridge hook
// --system, given the same payload): a daemon that cannot be reached or answers with an error
// (deny in enforce; in observe, judged and recorded there), and a settings change (judged as the
// user). If that program cannot be run either, the call is denied: enforce or observe cannot be
// known without it, and a hook must not fail open.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/hostsocket"
	"github.com/coworkbridge/coworkbridge/internal/buildinfo"
)

// wait bounds the daemon's answer, as the full hook's (hosthook.SystemWait).
const wait = 10 * time.Second

// maxPayload is the full hook's limit; a larger call is the full hook's to refuse.
const maxPayload = 16 << 20

// version is set at release time with -ldflags "-X main.version=v1.2.3", as coworkbridge's.
var version = ""

func main() {
	switch {
	case len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version" || os.Args[1] == "-v"):
		fmt.Printf("coworkbridge-hook %s\n", versionString())
		return
	case len(os.Args) > 2 || len(os.Args) == 2 && os.Args[1] != "--system":
		// Said, and the call still answered: a hook that exited here would let the call through.
		fmt.Fprintln(os.Stderr, "usage: coworkbridge-hook [--system] < PAYLOAD.json (the system drop-in runs it for every tool call); coworkbridge-hook --version")
	}
	os.Stdout.Write(answer(os.Stdin, os.Getenv, socket(os.Getenv), fullProgram))
}

// fullProgram is coworkbridge beside this program ("" when this program's path is unknown).
func fullProgram() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return filepath.Join(filepath.Dir(exe), "coworkbridge")
}

// answer is what the hook prints for the payload in: the daemon's answer at sock, or the full
// program's (found by fullProgram, only when it is needed). Nothing on the usual path decodes
// JSON: a decoder's first use is a tenth of this process (see hostsocket's encode).
func answer(in io.Reader, getenv func(string) string, sock string, fullProgram func() string) []byte {
	started := time.Now()
	data, err := io.ReadAll(io.LimitReader(in, maxPayload+1))
	if err != nil || len(data) > maxPayload || claudehook.IsConfigChange(data) {
		return full(fullProgram(), data, "")
	}
	a, err := hostsocket.Call(sock, hostsocket.Request{Kind: hostsocket.KindCall, Payload: bytes.TrimSpace(data),
		ConfigDir: getenv("CLAUDE_CONFIG_DIR"), HostSession: getenv("CLAUDE_CODE_HOST_SESSION_ID")}, started.Add(wait))
	if err != nil {
		return full(fullProgram(), data, err.Error())
	}
	return a.Output
}

// versionString is this build's: the release stamp, or what Go recorded.
func versionString() string { return buildinfo.Version(version) }

// socket is the daemon's socket: the platform's, or in a development build the override's.
func socket(getenv func(string) string) string {
	if p := getenv("COWORKBRIDGE_SOCKET"); devBuild && p != "" {
		return p
	}
	return hostsocket.DefaultPath(runtime.GOOS)
}

// full runs `coworkbridge hook --system` (program) on the payload; its environment is this
// process's.
func full(program string, data []byte, why string) []byte {
	err := fmt.Errorf("coworkbridge's program was not found beside the hook")
	if program != "" {
		cmd := exec.Command(program, "hook", "--system")
		cmd.Stdin, cmd.Stderr = bytes.NewReader(data), os.Stderr
		var out []byte
		if out, err = cmd.Output(); err == nil {
			return out
		}
	}
	if why == "" {
		why = "the settings change could not be judged"
	}
	return deny(fmt.Sprintf("coworkbridge: this tool call was blocked because the daemon could not judge it (%s) and coworkbridge could not judge it alone (%v); ask your IT team", why, err))
}

func deny(reason string) []byte {
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PreToolUse",
		"permissionDecision": "deny", "permissionDecisionReason": reason}})
	return out
}
