// Package lazy holds package-level values that are made the first time they are used, not when
// a process starts.
//
// coworkbridge's host hook is a process started on every tool call, and the initialisation of
// every package it links runs before the call's payload is read. A package-level
// sync.OnceValue is itself made at start-up (a call, three allocations); a Value written as a
// composite literal whose Make is a function literal that captures nothing is laid out in the
// binary by the compiler, so that declaring one runs no code at all. A test of each program
// holds the module's packages to that (see cbtest.InitOfModule).
//
// It is for tables of names and options, templates and rule sets: values that are the same for
// every caller and never change once made. It does not make values that can fail; Make must
// not panic.
package lazy

import "sync"

// Value is the value Make returns, made on the first Get. Declare it as a package-level
// variable written as a composite literal, and never copy it:
//
//	var names = lazy.Value[map[string]bool]{Make: func() map[string]bool { ... }}
type Value[T any] struct {
	// Make makes the value; it is called once, by the first Get.
	Make func() T
	once sync.Once
	v    T
}

// Get returns the value, making it first if no Get has.
func (l *Value[T]) Get() T {
	l.once.Do(l.make)
	return l.v
}

func (l *Value[T]) make() { l.v = l.Make() }
