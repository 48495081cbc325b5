//go:build coworkbridge_dev

package main

// devBuild: a development build honours the COWORKBRIDGE_* overrides (tests and benchmarks).
const devBuild = true
