//go:build !coworkbridge_dev

package main

// devBuild is false in a build for deployment: the hook's environment is partly the session's
// to choose, and must not name the socket.
const devBuild = false
