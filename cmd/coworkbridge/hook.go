package main

import (
	"context"
	"time"

	"github.com/coworkbridge/coworkbridge/hosthook"
	"github.com/coworkbridge/coworkbridge/hostsocket"
)

// cmdHook is an ordinary Claude Code PreToolUse command hook for sessions that run on the Mac
// itself. It always exits 0: Claude Code treats other exit codes as errors and lets the call
// through, so every refusal is a printed deny.
func cmdHook(_ context.Context, args []string, sio stdio) int {
	fs := newFlags("hook", "< PAYLOAD.json", "A Claude Code PreToolUse hook for sessions on this Mac: classifies the call with\n"+
		"the managed policy, records it, and prints a deny or ask (nothing for no objection).\n"+
		"`coworkbridge install --managed-settings` registers it for every Claude Code session.", sio)
	system := fs.Bool("system", false, "hand the call to the system-mode daemon over its socket (the drop-in of 'install --system')")
	if code, done := fs.parse(args); done {
		return code
	}
	if code, done := fs.noArgs(); done {
		return code
	}
	opts := hosthook.Options{DevOverrides: sio.devOverrides, Version: versionString(), Now: time.Now}
	answer := hosthook.Answer
	if *system {
		answer, opts.AskDaemon = hosthook.AnswerSystem, askDaemon
	}
	out := answer(sio.in, opts)
	if len(out) > 0 {
		sio.out.Write(out)
	}
	return exitOK
}

// askDaemon hands a call to the system-mode daemon over its socket (hosthook.Options.AskDaemon).
func askDaemon(socket string, r hosthook.Request, deadline time.Time) (hosthook.DaemonAnswer, error) {
	a, err := hostsocket.Call(socket, hostsocket.Request{Kind: hostsocket.KindCall, Payload: r.Payload,
		ConfigDir: r.ConfigDir, HostSession: r.HostSession}, deadline)
	return hosthook.DaemonAnswer{Off: a.Off, Output: a.Output}, err
}
