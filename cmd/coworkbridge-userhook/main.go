// Command coworkbridge-userhook is the host hook of per-user mode, as its managed-settings drop-in
// runs it before every tool call of every Claude Code session on the Mac: it judges the call with
// the managed policy, records it, and prints a deny or an ask (nothing for no objection). It is
// `coworkbridge hook` and nothing else of coworkbridge: the hook is a process started on every
// tool call, and a program that links no daemon, report or schema validator has less to map and
// to initialise before it can read the call.
//
// It always exits 0: Claude Code treats another exit status as the hook's failure, and every
// refusal is a printed deny.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/coworkbridge/coworkbridge/hosthook"
	"github.com/coworkbridge/coworkbridge/internal/buildinfo"
)

// version is set at release time with -ldflags "-X main.version=v1.2.3", as coworkbridge's.
var version = ""

func main() {
	switch {
	case len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version" || os.Args[1] == "-v"):
		fmt.Printf("coworkbridge-userhook %s\n", buildinfo.Version(version))
		return
	case len(os.Args) > 2 || len(os.Args) == 2 && os.Args[1] != "--per-user":
		// Said, and the call still judged: a hook that exited here would let the call through.
		fmt.Fprintln(os.Stderr, "usage: coworkbridge-userhook [--per-user] < PAYLOAD.json (the per-user drop-in runs it for every tool call); coworkbridge-userhook --version")
	}
	opts := hosthook.Options{DevOverrides: devBuild, Version: buildinfo.Version(version), Now: time.Now}
	os.Stdout.Write(hosthook.Answer(os.Stdin, opts))
}
