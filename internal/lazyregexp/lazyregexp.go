// Package lazyregexp holds regular expressions that are compiled the first time they are used,
// not when a process starts.
//
// coworkbridge's host hook is a process started on every tool call, and every package it links
// pays for its package-level expressions before the call's payload is read; one call needs few
// of them. It does not check expressions: a test compiles every expression the module writes
// with New, so that a mistake fails the build's tests rather than the first call that needs it.
package lazyregexp

import (
	"regexp"
	"sync"
)

// New is the expression src, compiled on first use; it panics then if src does not compile.
// src must be a constant string (the test that compiles them reads the source).
func New(src string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(src) })
}
