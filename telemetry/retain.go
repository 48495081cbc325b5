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

// retain moves the retained records of the file about to be dropped to the retained log. It runs
// under the inter-process lock; a crash after the move and before the drop moves them again at
// the next rotation, so the records already at the retained log's end are skipped.
func (l *Log) retain(drop string) error {
	fi, err := os.Lstat(drop)
	if errors.Is(err, os.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
		return nil
	}
	if err != nil {
		return err
	}
	dest := chainFile{path: RetainedPath(l.opts.Path), maxBytes: l.opts.MaxFileBytes, maxFiles: l.opts.MaxFiles, readers: l.readers()}
	lastKept, err := dest.lastLine()
	if err != nil {
		return err
	}
	skip := 0
	if lastKept != nil {
		err := scanRetained(drop, func(i int, line []byte) error {
			if bytes.Equal(unlinked(line), lastKept) {
				skip = i + 1
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	var batch [][]byte
	size := 0
	flush := func() error {
		err := dest.append(batch)
		batch, size = batch[:0], 0
		return err
	}
	if err := scanRetained(drop, func(i int, line []byte) error {
		if i < skip {
			return nil
		}
		batch = append(batch, bytes.Clone(unlinked(line)))
		if size += len(line); size >= retainBatch {
			return flush()
		}
		return nil
	}); err != nil {
		return err
	}
	if len(batch) > 0 {
		return flush()
	}
	return nil
}

// scanRetained calls fn with each retained record of the file at name, numbered from 0.
func scanRetained(name string, fn func(i int, line []byte) error) error {
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
		var r struct {
			Decision claudehook.Decision `json:"decision"`
			Rule     string              `json:"rule"`
		}
		if line[0] != '{' || json.Unmarshal(line, &r) != nil || !Retained(r.Decision, r.Rule) {
			continue
		}
		if err := fn(i, line); err != nil {
			return err
		}
		i++
	}
	return nil
}

// chainFile is a log of chained lines rotating by size, written only under its owner's lock: the
// retained log.
type chainFile struct {
	path     string
	maxBytes int64
	maxFiles int
	readers  readers
}

// lastLine returns the last line of the live file without its link: nil when it has none.
func (c chainFile) lastLine() ([]byte, error) {
	f, err := openRead(c.path)
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
	return unlinked(line), nil
}

// append chains lines after the file's head and writes them with one write, then syncs: the
// records are about to be dropped from the decision log.
func (c chainFile) append(lines [][]byte) error {
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

func (c chainFile) rotate() error {
	last := c.maxFiles - 1
	if last < 1 {
		return os.Remove(c.path)
	}
	_ = os.Remove(c.path + "." + strconv.Itoa(last))
	for i := last - 1; i >= 1; i-- {
		_ = os.Rename(c.path+"."+strconv.Itoa(i), c.path+"."+strconv.Itoa(i+1))
	}
	return os.Rename(c.path, c.path+".1")
}
