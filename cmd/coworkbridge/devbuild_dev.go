//go:build coworkbridge_dev

package main

import (
	"log/slog"
	"os"
	"runtime/pprof"
)

// devBuild: a development build, whose host hook honours the COWORKBRIDGE_* overrides.
const devBuild = true

// envCPUProfile names the file a development build's daemon writes its CPU profile to, from
// start to stop (cmd/roundtrip-bench -cpuprofile sets it).
const envCPUProfile = "COWORKBRIDGE_CPUPROFILE"

// startProfile starts the daemon's CPU profile when envCPUProfile asks for one; stop ends it.
func startProfile(log *slog.Logger) (stop func()) {
	path := os.Getenv(envCPUProfile)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		log.Warn("cannot write the CPU profile "+envCPUProfile+" asks for", "path", path, "err", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
