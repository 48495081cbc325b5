package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/hostsocket"
)

// snapshotServer answers status requests with snap.
type snapshotServer struct{ snap health.Snapshot }

func (s snapshotServer) Serve(context.Context, hostsocket.Peer, hostsocket.Request) hostsocket.Answer {
	data, _ := json.Marshal(s.snap)
	return hostsocket.Answer{V: 1, Status: data}
}

func TestStatusAsksASystemDaemonOverItsSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "run", "hook.sock")
	now := time.Now()
	snap := health.Snapshot{Version: 1, WrittenAt: now, Daemon: health.DaemonInfo{PID: 4242, Version: "1.0", StartedAt: now.Add(-time.Minute), HeartbeatInterval: "5m0s"},
		Config:   health.ConfigState{Path: "/Library/Application Support/CoworkBridge/managed.json", Enabled: true, Mode: "enforce", Origin: "file", Hash: "abc"},
		Sessions: []health.Session{{ID: "local_mine", Dir: "/Users/alex/sessions/local_mine", Seen: true, Hooked: true, Confirmed: true}}}
	srv, err := hostsocket.Listen(sock, snapshotServer{snap}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()
	t.Setenv("COWORKBRIDGE_SOCKET", sock)
	code, out, errs := runCLI(t, "", "status")
	if code != statusHealthy || !strings.Contains(out, "pid 4242") || !strings.Contains(out, "mode enforce") {
		t.Fatalf("status exited %d:\n%s%s", code, out, errs)
	}
}

func TestStatusSaysASystemDaemonThatDoesNotAnswerIsNotRunning(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "hook.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // a socket left behind by a daemon that is gone
	t.Setenv("COWORKBRIDGE_SOCKET", sock)
	code, out, errs := runCLI(t, "", "status")
	if code != statusNotRunning {
		t.Fatalf("status exited %d, want %d:\n%s%s", code, statusNotRunning, out, errs)
	}
}
