//go:build coworkbridge_dev

package main

import (
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"syscall"
)

// devBuild: a development build, whose host hook honours the COWORKBRIDGE_* overrides.
const devBuild = true

// envCPUProfile names the file a development build's daemon writes its CPU profile to. The
// profile starts at the first SIGUSR1 and ends when the daemon stops, so that it covers what a
// benchmark measures and not the start-up (cmd/roundtrip-bench -cpuprofile sets it and signals
// once the daemon has settled).
const envCPUProfile = "COWORKBRIDGE_CPUPROFILE"

// startProfile arms the daemon's CPU profile when envCPUProfile asks for one; stop ends it.
func startProfile(log *slog.Logger) (stop func()) {
	path := os.Getenv(envCPUProfile)
	if path == "" {
		return func() {}
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	var mu sync.Mutex
	var f *os.File
	go func() {
		if _, ok := <-usr1; !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		out, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(out)
		}
		if err != nil {
			log.Warn("cannot write the CPU profile "+envCPUProfile+" asks for", "path", path, "err", err)
			return
		}
		f = out
	}()
	return func() {
		signal.Stop(usr1)
		close(usr1)
		mu.Lock()
		defer mu.Unlock()
		if f != nil {
			pprof.StopCPUProfile()
			f.Close()
		}
	}
}
