// Package nameset holds sets of names that are built the first time they are looked in, not
// when a process starts.
//
// The classifier's tables name programs, options and keys by the hundred, and the host hook is a
// process started on every tool call: a map literal at package level is hashed and allocated
// before the call's payload is read, whether or not the call needs it. Of is small enough for
// the compiler to lay a package-level set out in the binary itself, so that declaring one costs
// nothing at start-up. Its first few lookups read the names in turn, and only a set looked in
// more often is hashed: a hook process looks in most sets a few times or never, where hashing a
// few hundred names costs more than all its lookups, and a daemon looks in them for every call.
// It is for sets written in the source; it does not change once made.
package nameset

import (
	"slices"
	"sync"
	"sync/atomic"
)

// scans is how many lookups read the names in turn before the set is hashed: about what hashing
// them costs, for a set of a few hundred names.
const scans = 32

// Set is a set of names, made into a map once it has been looked in often enough.
type Set struct {
	names []string
	looks atomic.Int32
	once  sync.Once
	m     map[string]struct{}
}

// Of is the set of names.
func Of(names ...string) *Set { return &Set{names: names} }

func (s *Set) build() {
	s.m = make(map[string]struct{}, len(s.names))
	for _, n := range s.names {
		s.m[n] = struct{}{}
	}
}

// Has reports whether name is in the set.
func (s *Set) Has(name string) bool {
	if s.looks.Load() < scans && s.looks.Add(1) <= scans {
		return slices.Contains(s.names, name)
	}
	s.once.Do(s.build)
	_, ok := s.m[name]
	return ok
}

// Names are the set's names as written, duplicates and all; the caller must not change them.
func (s *Set) Names() []string { return s.names }

// Len is the number of names in the set.
func (s *Set) Len() int {
	s.once.Do(s.build)
	return len(s.m)
}
