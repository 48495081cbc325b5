package telemetry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strconv"
)

// maxRotated is the most rotated files a log keeps (managed.json's telemetry.max_files allows
// 100, the live file among them).
const maxRotated = 99

// Files lists a decision log as rotation left it, oldest first: path.N … path.1, then path
// itself. Only regular files are listed; path is listed even when it does not exist, so that
// opening it says so.
func Files(path string) []string {
	var names []string
	for i := maxRotated; i >= 1; i-- {
		rotated := path + "." + strconv.Itoa(i)
		if fi, err := os.Stat(rotated); err == nil && fi.Mode().IsRegular() {
			names = append(names, rotated)
		}
	}
	return append(names, path)
}

// Archive lists the retained log of the decision log at path (see RetainedPath), oldest first,
// then the decision log as Files lists it: every record the log still holds, each once, oldest
// first within each part. Retained files that do not exist are left out.
func Archive(path string) (retained, log []string) {
	for _, name := range Files(RetainedPath(path)) {
		if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() {
			retained = append(retained, name)
		}
	}
	return retained, Files(path)
}

// ErrLineTooLong is yielded, once per line, for a line longer than a reader accepts; the line is
// skipped whole and reading goes on.
var ErrLineTooLong = errors.New("line longer than accepted")

// Lines yields the non-blank lines of r, a decision log or any JSON-lines file, without their
// newline and surrounding space. A line over maxLine bytes yields ErrLineTooLong instead; another
// read error is yielded last. Memory is bounded by maxLine, however long the lines are.
func Lines(r io.Reader, maxLine int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		br := bufio.NewReaderSize(r, min(maxLine, 1<<20))
		for {
			line, err := readLine(br, maxLine)
			switch {
			case errors.Is(err, ErrLineTooLong):
				if !yield(nil, err) {
					return
				}
				continue
			case err != nil && !errors.Is(err, io.EOF):
				yield(nil, fmt.Errorf("read: %w", err))
				return
			}
			if line = bytes.TrimSpace(line); len(line) > 0 && !yield(line, nil) {
				return
			}
			if err != nil { // EOF
				return
			}
		}
	}
}

// readLine returns the next line without its newline; a line over max is consumed whole and
// reported as ErrLineTooLong.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > max {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, ErrLineTooLong
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(buf, "\r\n"), err
	}
}

// ReadFile reads the records of one decision-log file; lines that are not records (a line being
// written, garbage) are skipped. A file that does not exist holds none.
func ReadFile(path string) ([]Record, error) {
	f, err := openRead(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Record
	for line, err := range Lines(f, maxRecordLine) {
		var r Record
		if err == nil && json.Unmarshal(line, &r) == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// maxRecordLine bounds a record ReadFile reads: far above what the log writes (inputs are
// truncated), so that only garbage is skipped.
const maxRecordLine = 16 << 20
