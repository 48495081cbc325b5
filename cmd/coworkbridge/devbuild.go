//go:build !coworkbridge_dev

package main

// devBuild is false in every build for deployment: the host hook, which runs with whatever
// environment a session's settings give it, then ignores the COWORKBRIDGE_* overrides. Build
// with -tags coworkbridge_dev for development and tests that need them.
const devBuild = false
