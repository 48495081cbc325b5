package realpath

import (
	"sync"
	"time"
)

// Cache keeps one policy's places by identity for a while, so that a call is not judged at the
// cost of a stat of every protected place and a listing of every sessions root. A place made,
// or a log rotated, since it was taken is known by its identity once it is taken again. Safe for
// concurrent use: the socket's calls and the lanes share one per policy.
type Cache struct {
	// For is how long the identities are trusted; Now the clock (nil: time.Now).
	For time.Duration
	Now func() time.Time
	// Places are the policy's places (the classifier's PlacePaths).
	Places func() (all, guard, sessions []string)

	mu sync.Mutex
	at time.Time
	of *Identities
}

// Get is the places by identity, taken again when older than For (or the clock went back).
func (c *Cache) Get() Identities {
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.of == nil || now.Sub(c.at) > c.For || now.Before(c.at) {
		ids := Of(c.Places())
		c.at, c.of = now, &ids
	}
	return *c.of
}
