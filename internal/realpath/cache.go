package realpath

import (
	"path/filepath"
	"strings"
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
	// Places are the policy's places (the classifier's PlacePaths). Secrets are the folders
	// also searched for a file's other names (the classifier's SecretFolders), and Home what ~/
	// in them stands for (the user's home; "": none is searched).
	Places  func() (all, guard, sessions []string)
	Secrets func() []string
	Home    string

	mu sync.Mutex
	at time.Time
	of *Identities
}

// InHome is paths with ~/ written as home; without a home, such paths are left out.
func InHome(paths []string, home string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			if home == "" {
				continue
			}
			p = filepath.Join(home, rest)
		}
		out = append(out, p)
	}
	return out
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
		if c.Secrets != nil && c.Home != "" {
			secrets, home := c.Secrets, c.Home
			ids = ids.WithSecrets(func() []string { return InHome(secrets(), home) })
		}
		c.at, c.of = now, &ids
	}
	return *c.of
}
