//go:build !coworkbridge_dev

package main

// devBuild is false in a build for deployment: the hook runs with whatever environment a
// session's settings give it, and ignores the COWORKBRIDGE_* overrides, which could point it at
// a policy of the agent's making.
const devBuild = false
