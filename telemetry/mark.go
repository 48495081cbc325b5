package telemetry

import (
	"fmt"
	"os"
	"strconv"
)

// mark is where a writer left the chain: the file, where its last line ended and that line's
// hash. Before its next write the writer checks that the line is still there as it was: what a
// process can do to the file between two writes (cut it, edit a record and relink every later
// one, swap the file) shows there.
type mark struct {
	fi os.FileInfo
	// start and end bound the line, its newline included; start is -1 when the writer did not
	// write the line itself (Check's mark) and it is found by reading back from end.
	start, end int64
	head       string
}

// Head is the end of the decision log's chain.
type Head struct {
	// Hash is the last record's LineHash: "" for an empty log.
	Hash string `json:"hash"`
	// File is the live file, Size its size when the head was read.
	File string `json:"file"`
	Size int64  `json:"size"`
}

// Check verifies that the log still holds, unchanged, the last line this writer wrote or saw,
// then takes the log's present end as the new mark and returns it. A daemon calls it at start
// and at every heartbeat, and publishes the head: a later edit of anything before it shows as a
// chain that no longer reaches it. What it finds is reported to Options.OnBreak and returned.
func (l *Log) Check() (Head, string, error) {
	h, err := l.checkLocked()
	problem := l.report()
	return h, problem, err
}

func (l *Log) checkLocked() (Head, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return Head{}, fmt.Errorf("decision log %s: closed", l.opts.Path)
	}
	if err := l.takeLock(); err != nil {
		return Head{}, fmt.Errorf("decision log %s: %w", l.opts.Path, err)
	}
	defer l.lock.Unlock()
	if err := l.current(); err != nil {
		return Head{}, fmt.Errorf("decision log %s: %w", l.opts.Path, err)
	}
	if l.torn {
		if err := l.mend(); err != nil {
			return Head{}, fmt.Errorf("decision log %s: %w", l.opts.Path, err)
		}
	}
	head, err := l.head(l.checkMark())
	if err != nil {
		return Head{}, fmt.Errorf("decision log %s: %w", l.opts.Path, err)
	}
	l.mark = mark{fi: l.fi, start: -1, end: l.fi.Size(), head: head}
	return Head{Hash: head, File: l.opts.Path, Size: l.fi.Size()}, nil
}

// report hands what checkMark found to OnBreak, outside every lock.
func (l *Log) report() string {
	l.mu.Lock()
	problem := l.broken
	l.broken = ""
	l.mu.Unlock()
	if problem != "" && l.opts.OnBreak != nil {
		l.opts.OnBreak(problem)
	}
	return problem
}

// checkMark looks for the marked line, in the live file or, rotated since, in one of the older
// ones, and notes in l.broken what happened to it. The mark is cleared: a break is told once.
// It returns the head when the mark is intact and still the live file's end, which saves the
// write reading the head again.
func (l *Log) checkMark() (head string) {
	m := l.mark
	l.mark = mark{}
	if m.fi == nil || m.end == 0 {
		return ""
	}
	name, fi := l.findMarked(m.fi)
	switch {
	case fi == nil && l.opts.MaxFiles < 2:
		// With no rotated file kept, any rotation removes the marked file: nothing to tell.
	case fi == nil:
		l.noteBreak(fmt.Sprintf("the file holding the record last written (%d bytes) was removed or replaced, not rotated", m.end))
	case fi.Size() < m.end:
		l.noteBreak(fmt.Sprintf("%s was cut from %d to %d bytes: records were removed", name, m.end, fi.Size()))
	default:
		got, err := l.hashLineBefore(name, m.start, m.end)
		if err != nil {
			l.noteBreak(fmt.Sprintf("the record last written cannot be read back from %s: %v", name, err))
		} else if got != m.head {
			l.noteBreak(fmt.Sprintf("the record ending at byte %d of %s was changed (its hash was %s, is %s): records before it were edited and relinked", m.end, name, m.head, got))
		} else if name == l.opts.Path && fi.Size() == m.end {
			return m.head
		}
	}
	return ""
}

// findMarked returns the name and present state of the file the mark is in.
func (l *Log) findMarked(marked os.FileInfo) (string, os.FileInfo) {
	if os.SameFile(marked, l.fi) {
		return l.opts.Path, l.fi
	}
	for i := 1; i < max(l.opts.MaxFiles, 2); i++ {
		name := l.opts.Path + "." + strconv.Itoa(i)
		if fi, err := os.Lstat(name); err == nil && os.SameFile(marked, fi) {
			return name, fi
		}
	}
	return "", nil
}

// hashLineBefore returns the hash of the line of the file name that ends at end, or a value no
// hash has when no line ends there. A line whose start is known (start >= 0) is read in one
// read with the newline before it, where it fits the scratch buffer.
func (l *Log) hashLineBefore(name string, start, end int64) (string, error) {
	f := l.f
	if name != l.opts.Path {
		var err error
		if f, err = openRead(name); err != nil {
			return "", err
		}
		defer f.Close()
	}
	buf := l.scratch()
	from := max(start-1, 0)
	if start >= 0 && start < end && end-from <= int64(len(buf)) {
		b := buf[:end-from]
		if _, err := f.ReadAt(b, from); err != nil {
			return "", err
		}
		switch {
		case b[len(b)-1] != '\n':
			return "not the end of a line", nil
		case start > 0 && b[0] != '\n':
			return "not the start of a line", nil
		}
		return LineHash(b[start-from:]), nil
	}
	if _, err := f.ReadAt(buf[:1], end-1); err != nil {
		return "", err
	}
	if buf[0] != '\n' {
		return "not the end of a line", nil
	}
	return hashLineEndingAt(f, end, buf)
}

// scratch is the log's buffer for reading its chain back; l.mu is held.
func (l *Log) scratch() []byte {
	if l.buf == nil {
		l.buf = make([]byte, scratch)
	}
	return l.buf
}
