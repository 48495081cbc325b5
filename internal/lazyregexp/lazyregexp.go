// Package lazyregexp holds regular expressions that are compiled the first time they are used,
// not when a process starts.
//
// coworkbridge's host hook is a process started on every tool call, and every package it links
// pays for its package-level expressions before the call's payload is read; one call needs few
// of them. New is small enough for the compiler to lay a package-level expression out in the
// binary itself, so that declaring one costs nothing at start-up: no allocation, no code run.
// It does not check expressions: a test compiles every expression the module writes with New, so
// that a mistake fails the build's tests rather than the first call that needs it.
package lazyregexp

import (
	"regexp"
	"sync"
	"sync/atomic"
)

// Regexp is an expression compiled on first use. Its methods are regexp.Regexp's.
type Regexp struct {
	src  string
	re   atomic.Pointer[regexp.Regexp]
	once sync.Once
	bad  any // what compiling src panicked with
}

// New is the expression src, compiled on first use; it panics then, and at every use after, if
// src does not compile. src must be a constant string (the test that compiles them reads the
// source).
func New(src string) *Regexp { return &Regexp{src: src} }

// Regexp is the compiled expression.
func (l *Regexp) Regexp() *regexp.Regexp {
	if re := l.re.Load(); re != nil {
		return re
	}
	l.once.Do(l.compile)
	if l.bad != nil {
		panic(l.bad)
	}
	return l.re.Load()
}

func (l *Regexp) compile() {
	defer func() { l.bad = recover() }()
	l.re.Store(regexp.MustCompile(l.src))
}

// String is the expression's source.
func (l *Regexp) String() string { return l.src }

func (l *Regexp) MatchString(s string) bool { return l.Regexp().MatchString(s) }
func (l *Regexp) Match(b []byte) bool       { return l.Regexp().Match(b) }
func (l *Regexp) FindString(s string) string {
	return l.Regexp().FindString(s)
}
func (l *Regexp) FindStringIndex(s string) []int { return l.Regexp().FindStringIndex(s) }
func (l *Regexp) FindStringSubmatch(s string) []string {
	return l.Regexp().FindStringSubmatch(s)
}
func (l *Regexp) FindStringSubmatchIndex(s string) []int {
	return l.Regexp().FindStringSubmatchIndex(s)
}
func (l *Regexp) FindAllString(s string, n int) []string { return l.Regexp().FindAllString(s, n) }
func (l *Regexp) FindAllStringIndex(s string, n int) [][]int {
	return l.Regexp().FindAllStringIndex(s, n)
}
func (l *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return l.Regexp().FindAllStringSubmatch(s, n)
}
func (l *Regexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return l.Regexp().FindAllStringSubmatchIndex(s, n)
}
func (l *Regexp) ReplaceAllString(src, repl string) string {
	return l.Regexp().ReplaceAllString(src, repl)
}
func (l *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return l.Regexp().ReplaceAllStringFunc(src, repl)
}
func (l *Regexp) SubexpIndex(name string) int { return l.Regexp().SubexpIndex(name) }
func (l *Regexp) SubexpNames() []string       { return l.Regexp().SubexpNames() }
