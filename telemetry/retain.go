package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/ruleid"
)

// Records are kept in two classes. Routine allows rotate out of the decision log as it fills;
// the records an investigation needs (see Retained) move, when the file holding them is about to
// be dropped, to the retained log beside it, which nothing else fills: one session's flood of
// harmless calls can push another session's deny out of the decision log, never out of the
// record.

// RetainedPath is the retained log of the decision log at path: decisions.retained.jsonl beside
// decisions.jsonl.
func RetainedPath(path string) string {
	if base, ok := strings.CutSuffix(path, ".jsonl"); ok {
		return base + ".retained.jsonl"
	}
	return path + ".retained"
}

// Retained reports whether a record is kept apart from routine allows: a deny or an ask, applied
// or only observed, and every finding of coworkbridge's own (a call that ran unguarded, a
// transcript or the log tampered with, a forged event, a planted file, a flood summarised).
func Retained(decision claudehook.Decision, rule string) bool {
	return decision != claudehook.Allow || ruleid.IsGuard(rule)
}

// retainBatch bounds the lines moved to the retained log with one write.
const retainBatch = 1 << 20

// retain moves the records of the file about to be dropped that are kept to the retained log:
// the retained class, and the routine records of the sessions within their share of the log (see
// fair.go). It returns what each session over its share lost. It runs under the inter-process
// lock; a crash after the move and before the drop moves them again at the next rotation, so the
// records already at the retained log's end are skipped.
func (l *Log) retain(drop string) (evicted map[string]*eviction, lostYoung int, err error) {
	fi, err := os.Lstat(drop)
	if errors.Is(err, os.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if l.shares == nil {
		l.shares = shareCache{}
	}
	holdings := l.shares.holdings(Files(l.opts.Path))
	limit := share(l.opts.MaxFileBytes*int64(max(l.opts.MaxFiles, 1)), holdings)
	// With no session over its share, the log filled by fair use: the oldest routine records go,
	// whoever's they are. Otherwise only those of the sessions over their share go.
	overAny := false
	for _, n := range holdings {
		overAny = overAny || n > limit
	}
	keep := func(session string, r lineFacts) bool {
		return Retained(r.Decision, r.Rule) || overAny && holdings[session] <= limit
	}
	dest := l.retainedChain()
	lastKept, err := dest.lastLine()
	if err != nil {
		return nil, 0, err
	}
	skip := 0
	if lastKept != nil {
		err := scanKept(drop, keep, func(i int, line []byte, _ lineFacts) error {
			if i >= 0 && bytes.Equal(unlinked(line), lastKept) {
				skip = i + 1
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	evicted = map[string]*eviction{}
	var batch [][]byte
	size := 0
	flush := func() error {
		err := dest.append(batch)
		batch, size = batch[:0], 0
		return err
	}
	if err := scanKept(drop, keep, func(i int, line []byte, r lineFacts) error {
		if i < 0 && !overAny {
			return nil // a rotation like any other
		}
		if i < 0 {
			s := sessionOf(line)
			if evicted[s] == nil {
				evicted[s] = &eviction{held: holdings[s], share: limit, sessions: len(holdings)}
			}
			evicted[s].add(line, r.TS)
			return nil
		}
		if i < skip {
			return nil
		}
		batch = append(batch, bytes.Clone(unlinked(line)))
		if size += len(line); size >= retainBatch {
			return flush()
		}
		return nil
	}); err != nil {
		return nil, 0, err
	}
	if len(batch) > 0 {
		if err := flush(); err != nil {
			return nil, 0, err
		}
	}
	return evicted, dest.lostYoung, nil
}

// lineFacts are the fields of a record line the rotation decides by.
type lineFacts struct {
	TS       time.Time           `json:"ts"`
	Decision claudehook.Decision `json:"decision"`
	Rule     string              `json:"rule"`
}

// scanKept calls fn with each record of the file at name: the kept ones (keep) numbered from 0,
// the others with -1. Lines that are no record are skipped.
func scanKept(name string, keep func(session string, r lineFacts) bool, fn func(i int, line []byte, r lineFacts) error) error {
	f, err := openRead(name)
	if err != nil {
		return err
	}
	defer f.Close()
	i := 0
	for line, err := range Lines(f, maxRecordLine) {
		if err != nil {
			if errors.Is(err, ErrLineTooLong) {
				continue
			}
			return fmt.Errorf("read %s: %w", name, err)
		}
		var r lineFacts
		if line[0] != '{' || json.Unmarshal(line, &r) != nil {
			continue
		}
		n := -1
		if keep(sessionOf(line), r) {
			n, i = i, i+1
		}
		if err := fn(n, line, r); err != nil {
			return err
		}
	}
	return nil
}

// chainFile is a log of chained lines rotating by size, written only under its owner's lock: the
// retained log. Its oldest file is not dropped while its newest record is younger than minAge:
// the log grows past maxFiles instead, up to maxIndex rotated files, past which the oldest goes
// whatever its age and lostYoung counts its records.
type chainFile struct {
	path     string
	maxBytes int64
	maxFiles int
	readers  readers
	minAge   time.Duration
	now      func() time.Time
	// lostYoung counts the records younger than minAge dropped at the hard bound.
	lostYoung int
}

// retainedChain is the retained log of l.
func (l *Log) retainedChain() *chainFile {
	return &chainFile{path: RetainedPath(l.opts.Path), maxBytes: l.opts.MaxFileBytes, maxFiles: l.opts.MaxFiles,
		readers: l.readers(), minAge: l.opts.RetainMinAge, now: l.now}
}

// maxIndex is the highest rotated file the chain may reach while keeping young records: four
// times its bound, within what Files lists.
func (c *chainFile) maxIndex() int { return min(maxRotated, 4*max(c.maxFiles, 1)-1) }

// lastLine returns the last line of the live file without its link: nil when it has none.
func (c *chainFile) lastLine() ([]byte, error) {
	line, err := lastLineOf(c.path)
	if line == nil || err != nil {
		return nil, err
	}
	return unlinked(line), nil
}

// lastLineOf returns the last line of the file at name: nil when it has none or does not exist.
func lastLineOf(name string) ([]byte, error) {
	f, err := openRead(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, scratch)
	nl, err := lastIndex(f, fi.Size(), buf)
	if err != nil || nl < 0 {
		return nil, err
	}
	start, err := lastIndex(f, nl, buf)
	if err != nil || nl-(start+1) > maxRecordLine {
		return nil, err
	}
	line := make([]byte, nl-(start+1))
	if _, err := f.ReadAt(line, start+1); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return line, nil
}

// young reports whether the newest record of the file at name is younger than the chain's
// minimum age. A file whose last line tells no time is not young.
func (c *chainFile) young(name string) bool {
	if c.minAge <= 0 {
		return false
	}
	line, err := lastLineOf(name)
	var r lineFacts
	if err != nil || line == nil || json.Unmarshal(line, &r) != nil || r.TS.IsZero() {
		return false
	}
	return c.now().Sub(r.TS) < c.minAge
}

// append chains lines after the file's head and writes them with one write, then syncs: the
// records are about to be dropped from the decision log.
func (c *chainFile) append(lines [][]byte) error {
	f, fi, _, err := openOrCreateOwn(c.path, os.O_RDWR|os.O_APPEND)
	if err != nil {
		return err
	}
	if c.maxBytes > 0 && fi.Size() >= c.maxBytes {
		f.Close()
		if err := c.rotate(); err != nil {
			return err
		}
		if f, fi, _, err = openOrCreateOwn(c.path, os.O_RDWR|os.O_APPEND); err != nil {
			return err
		}
	}
	defer f.Close()
	if err := c.readers.fit(f, fi); err != nil {
		return err
	}
	prev, err := tailHash(f, fi.Size(), make([]byte, scratch))
	if err == nil && fi.Size() == 0 {
		prev, err = fileHead(c.path + ".1")
	}
	if err != nil {
		return fmt.Errorf("read the head of %s: %w", c.path, err)
	}
	var buf []byte
	for _, line := range lines {
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		linked := withPrev(line, prev)
		prev = LineHash(linked)
		buf = append(append(buf, linked...), '\n')
	}
	if _, err := f.Write(buf); err != nil {
		return fmt.Errorf("write %s: %w", c.path, err)
	}
	return f.Sync()
}

// rotate shifts path -> path.1 -> path.2 ..., dropping the oldest files past the bound unless
// they hold records younger than the minimum age and the hard bound is not reached.
func (c *chainFile) rotate() error {
	last := c.maxFiles - 1
	if last < 1 && c.minAge <= 0 {
		return os.Remove(c.path)
	}
	last = max(last, 1)
	n := 0
	for i := maxRotated; i >= 1; i-- {
		if _, err := os.Lstat(c.path + "." + strconv.Itoa(i)); err == nil {
			n = i
			break
		}
	}
	for ; n >= last; n-- {
		oldest := c.path + "." + strconv.Itoa(n)
		young := c.young(oldest)
		if young && n+1 <= c.maxIndex() {
			break // kept: the chain grows past its bound
		}
		if young {
			c.lostYoung += countLines(oldest)
		}
		_ = os.Remove(oldest)
	}
	for i := n; i >= 1; i-- {
		_ = os.Rename(c.path+"."+strconv.Itoa(i), c.path+"."+strconv.Itoa(i+1))
	}
	return os.Rename(c.path, c.path+".1")
}

// countLines counts the lines of the file at name.
func countLines(name string) int {
	f, err := openRead(name)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	for _, err := range Lines(f, maxRecordLine) {
		if err == nil || errors.Is(err, ErrLineTooLong) {
			n++
		}
	}
	return n
}
