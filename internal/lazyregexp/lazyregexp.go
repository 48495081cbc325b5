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
	"sync/atomic"
)

// New is the expression src, compiled on first use; it panics then, and at every use after, if
// src does not compile. src must be a constant string (the test that compiles them reads the
// source).
func New(src string) func() *regexp.Regexp {
	l := &lazy{src: src}
	return l.get // two allocations at package init, where sync.OnceValue makes three
}

// lazy is one expression and its compiled form once made.
type lazy struct {
	src  string
	re   atomic.Pointer[regexp.Regexp]
	once sync.Once
	bad  any // what compiling src panicked with
}

func (l *lazy) get() *regexp.Regexp {
	if re := l.re.Load(); re != nil {
		return re
	}
	l.once.Do(l.compile)
	if l.bad != nil {
		panic(l.bad)
	}
	return l.re.Load()
}

func (l *lazy) compile() {
	defer func() { l.bad = recover() }()
	l.re.Store(regexp.MustCompile(l.src))
}
