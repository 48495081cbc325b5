//go:build coworkbridge_dev

package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
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

// envHeapProfile names the files a development build's daemon writes a heap profile to, one at
// each SIGUSR1, after a collection: <path>.1, <path>.2, … (cmd/soak -heapprofile sets it and
// signals at each of its samples, so that what a churn leaves held is named by what holds it).
const envHeapProfile = "COWORKBRIDGE_HEAPPROFILE"

// envWorkerCPUProfile names the files a development build's system daemon has its workers
// write their CPU profiles to: <path>.<uid>, from the worker's first SIGUSR1 to its second
// (cmd/roundtrip-bench -idle -users -cpuprofile sets it, and signals each worker as the window
// opens and as it closes).
const envWorkerCPUProfile = "COWORKBRIDGE_WORKER_CPUPROFILE"

// startProfile arms the daemon's CPU profile when envCPUProfile asks for one, and its heap
// profiles when envHeapProfile does; stop ends them.
func startProfile(log *slog.Logger) (stop func()) {
	stopHeap := heapProfiles(log)
	stopCPU := cpuProfile(log, os.Getenv(envCPUProfile))
	return func() { stopCPU(); stopHeap() }
}

// startWorkerProfile arms a worker's CPU profile when root passed envWorkerCPUProfile on.
func startWorkerProfile(log *slog.Logger) (stop func()) {
	path := os.Getenv(envWorkerCPUProfile)
	if path == "" {
		return func() {}
	}
	return cpuProfile(log, fmt.Sprintf("%s.%d", path, os.Getuid()))
}

// workerEnv is what root adds to its workers' environment: the profile envWorkerCPUProfile asks
// for, and nothing else.
func workerEnv() []string {
	if path := os.Getenv(envWorkerCPUProfile); path != "" {
		return []string{envWorkerCPUProfile + "=" + path}
	}
	return nil
}

// heapProfiles writes a heap profile at each SIGUSR1 while the daemon runs.
func heapProfiles(log *slog.Logger) (stop func()) {
	path := os.Getenv(envHeapProfile)
	if path == "" {
		return func() {}
	}
	// One sample per 512 KiB allocated (the default) names a few dozen holders of a daemon's
	// tens of megabytes, and misses what a churn leaves in small pieces: sample every 4 KiB.
	runtime.MemProfileRate = 4 << 10
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 1; ; n++ {
			if _, ok := <-usr1; !ok {
				return
			}
			runtime.GC() // the profile's in-use figures are as of the last collection
			name := fmt.Sprintf("%s.%d", path, n)
			tmp := name + ".tmp"
			out, err := os.Create(tmp)
			if err == nil {
				err = errors.Join(pprof.Lookup("heap").WriteTo(out, 0), out.Close())
			}
			if err == nil {
				err = os.Rename(tmp, name) // whole when it appears: the harness waits for it
			}
			if err != nil {
				log.Warn("cannot write the heap profile "+envHeapProfile+" asks for", "path", name, "err", err)
			}
		}
	}()
	return func() {
		signal.Stop(usr1)
		close(usr1)
		<-done
	}
}

// cpuProfile arms a CPU profile written to path ("": none), from the first SIGUSR1 to the
// second or the end, whichever comes first: a window measured ends before the process stops,
// and what stopping costs is not the window's.
func cpuProfile(log *slog.Logger, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	var mu sync.Mutex
	var f *os.File
	end := func() {
		mu.Lock()
		defer mu.Unlock()
		if f != nil {
			pprof.StopCPUProfile()
			f.Close()
			f = nil
		}
	}
	go func() {
		if _, ok := <-usr1; !ok {
			return
		}
		mu.Lock()
		out, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(out)
		}
		if err != nil {
			mu.Unlock()
			log.Warn("cannot write the CPU profile asked for", "path", path, "err", err)
			return
		}
		f = out
		mu.Unlock()
		if _, ok := <-usr1; ok {
			end()
		}
	}()
	return func() {
		signal.Stop(usr1)
		close(usr1)
		end()
	}
}
