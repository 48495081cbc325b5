//go:build coworkbridge_dev

package main

// devBuild: a development build honours COWORKBRIDGE_SOCKET (tests and benchmarks).
const devBuild = true
