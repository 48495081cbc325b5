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
	// notes are small records a caller keeps beside its positions and commits with them.
	notes map[string]json.RawMessage
}

// storeFile is the file's form; a file of the first form is the positions map alone.
type storeFile struct {
	V         int                        `json:"v"`
	Positions map[string]Position        `json:"positions"`
	Notes     map[string]json.RawMessage `json:"notes,omitempty"`
}

// OpenStore loads the positions at path. A missing file is an empty store. A damaged one is
// returned empty with an error: reading again from the start duplicates events (which carry
// their rid) but loses none.
func OpenStore(path string) (*Store, error) {
	s := &Store{path: path, m: map[string]Position{}, notes: map[string]json.RawMessage{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read offsets: %w", err)
	}
	var f storeFile
	err = json.Unmarshal(data, &f)
	switch {
	case err == nil && f.V == 2:
		s.m = f.Positions
		if f.Notes != nil {
			s.notes = f.Notes
		}
	default:
		err = json.Unmarshal(data, &s.m) // the first form
	}
	if err != nil || s.m == nil {
		s.m, s.notes = map[string]Position{}, map[string]json.RawMessage{}
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

// Lookup returns the position for key and whether there is one.
func (s *Store) Lookup(key string) (Position, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.m[key]
	return p, ok
}

// Set records a position in memory.
func (s *Store) Set(key string, p Position) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = p
}

// Forget drops a key and its note, for a spool that has been drained and removed.
func (s *Store) Forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	delete(s.notes, key)
}

// Note returns the note kept under key, nil when there is none.
func (s *Store) Note(key string) json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notes[key]
}

// SetNote keeps a note under key until the next Commit writes it; nil removes it. Keys listed
// and forgotten are shared with positions.
func (s *Store) SetNote(key string, note json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if note == nil {
		delete(s.notes, key)
		return
	}
	s.notes[key] = note
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
	for k := range s.notes {
		if _, ok := s.m[k]; !ok && strings.HasPrefix(k, prefix) {
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
	snapshot := storeFile{V: 2, Positions: maps.Clone(s.m), Notes: maps.Clone(s.notes)}
	s.mu.Unlock()
	data, err := json.Marshal(snapshot)
	if err != nil {
		return fmt.Errorf("encode offsets: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("write offsets: %w", err)
	}
	// The temporary file beside the offsets: without a folder named, renameio looks each time
	// for whether the system's temporary folder would do, at the cost of a create, a rename and
	// a removal per commit.
	if err := renameio.WriteFile(s.path, data, 0o600, renameio.WithTempDir(filepath.Dir(s.path))); err != nil {
		return fmt.Errorf("write offsets: %w", err)
	}
	return nil
}
