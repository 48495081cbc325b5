package spool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/renameio/v2"
)

// Store keeps the read position of every spool, keyed by the caller (a session and the spool's
// identity, so that a spool renamed aside keeps its position). Set changes memory only; Commit
// writes the file atomically and fsyncs it, and the caller calls it only once the work up to
// those positions (decisions, telemetry) is done. A crash therefore replays, never skips.
type Store struct {
	path string
	// commitMu orders commits: a snapshot taken later is never overwritten by an earlier one.
	commitMu sync.Mutex
	mu       sync.Mutex
	m        map[string]Position
}

// OpenStore loads the positions at path. A missing file is an empty store. A damaged one is
// returned empty with an error: reading again from the start duplicates events (which carry
// their rid) but loses none.
func OpenStore(path string) (*Store, error) {
	s := &Store{path: path, m: map[string]Position{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read offsets: %w", err)
	}
	if err := json.Unmarshal(data, &s.m); err != nil {
		s.m = map[string]Position{}
		return s, fmt.Errorf("offsets file %s is damaged, starting every spool from its beginning: %w", path, err)
	}
	return s, nil
}

// Get returns the position for key, zero when there is none.
func (s *Store) Get(key string) Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

// Set records a position in memory.
func (s *Store) Set(key string, p Position) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = p
}

// Forget drops a key, for a spool that has been drained and removed.
func (s *Store) Forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// Keys returns the keys that start with prefix, in no particular order.
func (s *Store) Keys(prefix string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.m {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	return keys
}

// Commit writes every position to disk, atomically and durably.
func (s *Store) Commit() error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	snapshot := maps.Clone(s.m)
	s.mu.Unlock()
	data, err := json.Marshal(snapshot)
	if err != nil {
		return fmt.Errorf("encode offsets: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("write offsets: %w", err)
	}
	if err := renameio.WriteFile(s.path, data, 0o600); err != nil {
		return fmt.Errorf("write offsets: %w", err)
	}
	return nil
}
