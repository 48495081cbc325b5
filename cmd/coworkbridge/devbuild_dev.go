//go:build coworkbridge_dev

package main

// devBuild: a development build, whose host hook honours the COWORKBRIDGE_* overrides.
const devBuild = true
