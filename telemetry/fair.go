package telemetry

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/ruleid"
)

// A session's records can push out only its own. Each session holds a share of the decision
// log: its size over the number of sessions with records in it. When the oldest file is dropped,
// a routine record of a session over its share goes (that session's oldest go first, since the
// oldest file goes first), while one of a session within its share moves to the retained log, as
// the retained class always does. What a session lost is recorded, once per session and drop,
// in the log itself (ruleid.Evicted): an agent flooding the log with its own routine calls costs
// only its own history, and leaves a record saying so.

// fileKey is a file's identity and size: a sealed file keeps both through its renames.
type fileKey struct {
	dev, ino uint64
	size     int64
}

// shareCache remembers each decision-log file's bytes per session, so that a file is read for
// it once, not at every rotation. It belongs to one Log and is used under its mutex.
type shareCache map[fileKey]map[string]int64

// holdings sums the bytes per session of the files named, forgetting the files not among them.
func (c shareCache) holdings(names []string) map[string]int64 {
	total := map[string]int64{}
	seen := map[fileKey]bool{}
	for _, name := range names {
		k, counts, err := c.counts(name)
		if err != nil {
			continue // gone, or not a file the log made: it holds no one's share
		}
		seen[k] = true
		for s, n := range counts {
			total[s] += n
		}
	}
	for k := range c {
		if !seen[k] {
			delete(c, k)
		}
	}
	return total
}

// counts returns the bytes per session of the file at name, read unless known.
func (c shareCache) counts(name string) (fileKey, map[string]int64, error) {
	f, err := openRead(name)
	if err != nil {
		return fileKey{}, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fileKey{}, nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, nil, errors.New("no file identity")
	}
	k := fileKey{dev: uint64(st.Dev), ino: st.Ino, size: fi.Size()}
	if m, ok := c[k]; ok {
		return k, m, nil
	}
	m := map[string]int64{}
	for line, err := range Lines(f, maxRecordLine) {
		if err != nil {
			continue // a line too long is no one's; a read error ends the count where it is
		}
		m[sessionOf(line)] += int64(len(line) + 1)
	}
	c[k] = m
	return k, m, nil
}

// sessionOf is a record line's session, read without decoding the line: the log writes the
// session before the input, the only field whose text the agent shapes as JSON, so the first
// "session" key is the record's own. A line that has none counts as the session "".
func sessionOf(line []byte) string {
	const key = `"session":"`
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return ""
	}
	rest := line[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || j > 256 {
		return ""
	}
	return string(rest[:j])
}

// share is what each session may hold of a log of capacity bytes, given what each holds.
func share(capacity int64, holdings map[string]int64) int64 {
	if len(holdings) == 0 {
		return capacity
	}
	return capacity / int64(len(holdings))
}

// eviction is what one session lost when a file was dropped.
type eviction struct {
	records       int
	bytes         int64
	first, latest time.Time
	held          int64 // what the session held of the log
	share         int64 // its share
	sessions      int   // among how many
}

func (e *eviction) add(line []byte, ts time.Time) {
	e.records++
	e.bytes += int64(len(line) + 1)
	if e.first.IsZero() || ts.Before(e.first) {
		e.first = ts
	}
	if ts.After(e.latest) {
		e.latest = ts
	}
}

// evictionNotices are the records of what the rotation evicted: one per session that lost
// routine records, and one for records younger than the retained log's minimum age lost at its
// hard bound.
func (l *Log) evictionNotices(evicted map[string]*eviction, lostYoung int) [][]byte {
	now := l.now()
	var out [][]byte
	note := func(session, reason string) {
		var rid [16]byte
		_, _ = rand.Read(rid[:]) // crypto/rand never fails on supported platforms
		r := Record{TS: now, RID: hex.EncodeToString(rid[:]), Session: session, Agent: "cowork", Transport: "decision-log", Mode: cmp.Or(l.opts.Mode, "observe"),
			Input: json.RawMessage("null"), Decision: claudehook.Allow, Rule: ruleid.Evicted, Reason: reason}
		if line, err := l.Encode(r); err == nil {
			out = append(out, line)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(evicted)) {
		e := evicted[s]
		note(s, fmt.Sprintf("%d routine records of this session (%d KiB, %s to %s) rotated out of the decision log: it held %d KiB, over its share of %d KiB among %d sessions; other sessions' records were kept",
			e.records, e.bytes>>10, e.first.UTC().Format(time.RFC3339), e.latest.UTC().Format(time.RFC3339), e.held>>10, e.share>>10, e.sessions))
	}
	if lostYoung > 0 {
		note("", fmt.Sprintf("%d retained records younger than the minimum age rotated out: the retained log reached its hard bound (four times telemetry.max_files); raise max_file_mb or lower retained_min_days", lostYoung))
	}
	return out
}
