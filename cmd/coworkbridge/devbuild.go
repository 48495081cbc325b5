//go:build !coworkbridge_dev

package main

import "log/slog"

// devBuild is false in every build for deployment: the host hook, which runs with whatever
// environment a session's settings give it, then ignores the COWORKBRIDGE_* overrides. Build
// with -tags coworkbridge_dev for development and tests that need them.
const devBuild = false

// startProfile does nothing in a build for deployment: profiling, and the runtime/pprof package
// the host hook would otherwise link, are for development builds.
func startProfile(*slog.Logger) (stop func()) { return func() {} }

// startWorkerProfile does nothing in a build for deployment.
func startWorkerProfile(*slog.Logger) (stop func()) { return func() {} }

// workerEnv is nothing in a build for deployment: a worker's environment is root's to make.
func workerEnv() []string { return nil }
