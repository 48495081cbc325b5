package telemetry

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// The decision log is a hash chain: every record begins with "prev", the hash of the line before
// it (in the same file or, for a file's first line, the last line of the file it was rotated
// from). Cutting, inserting or editing a record breaks the link of the record after it, unless
// every later line is rewritten too, which changes the last line's hash, the chain's head: the
// daemon publishes the head in its heartbeat and health.json and checks, before each write, that
// the line it wrote last is still there as it wrote it.
//
// The chain has no key: anyone who can write the file can forge a consistent one. What it gives
// is that an edit cannot be quiet: it shows against a head published out of the file's reach.

// hashLen is how many bytes of SHA-256 a link keeps: 128 bits leaves a second preimage out of
// reach and keeps the link a small part of a record.
const hashLen = 16

// Genesis is the link of a chain's first record: no record came before it.
const genesis = "00000000000000000000000000000000" // 2*hashLen zeros, written out: no call at start-up

// prevPrefix is how every chained line begins.
const prevPrefix = `{"prev":"`

// LineHash is the link to a log line: its SHA-256 without the newline, shortened to hashLen bytes,
// in hex.
func LineHash(line []byte) string {
	sum := sha256.Sum256(bytes.TrimSuffix(line, []byte("\n")))
	return hex.EncodeToString(sum[:hashLen])
}

// withPrev makes an encoded record (a JSON object) a link of the chain after prev.
func withPrev(line []byte, prev string) []byte {
	prev = cmp.Or(prev, genesis)
	out := make([]byte, 0, len(line)+len(prevPrefix)+len(prev)+2)
	out = append(out, prevPrefix...)
	out = append(out, prev...)
	out = append(out, `",`...)
	return append(out, line[1:]...)
}

// linkOf returns the prev a line carries, and whether it carries one.
func linkOf(line []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(prevPrefix))
	if !ok || len(rest) < 2*hashLen+2 || string(rest[2*hashLen:2*hashLen+2]) != `",` {
		return "", false
	}
	return string(rest[:2*hashLen]), true
}

// unlinked is a chained line without its link: what a record is outside its chain.
func unlinked(line []byte) []byte {
	if _, ok := linkOf(line); !ok {
		return line
	}
	return append([]byte("{"), line[len(prevPrefix)+2*hashLen+2:]...)
}

// tailHash returns the hash of the last line of f, whose size is size: "" when it holds none.
// A line without its newline at the end (one being written, or torn) is not a line yet. buf is
// scratch space, so that a write allocates nothing here.
func tailHash(f *os.File, size int64, buf []byte) (string, error) {
	nl, err := lastIndex(f, size, buf)
	if err != nil || nl < 0 {
		return "", err
	}
	return hashLineEndingAt(f, nl+1, buf)
}

// lastIndex returns the offset of the last newline before end, -1 when there is none.
func lastIndex(f *os.File, end int64, buf []byte) (int64, error) {
	for end > 0 {
		start := max(0, end-int64(len(buf)))
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("read %s: %w", f.Name(), err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i), nil
		}
		end = start
	}
	return -1, nil
}

// hashLineEndingAt returns the hash of the line whose newline is the byte before end.
func hashLineEndingAt(f *os.File, end int64, buf []byte) (string, error) {
	start, err := lastIndex(f, end-1, buf)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, start+1, end-1-(start+1)), buf); err != nil {
		return "", fmt.Errorf("hash a line of %s: %w", f.Name(), err)
	}
	return hex.EncodeToString(h.Sum(nil)[:hashLen]), nil
}

// scratch is the buffer size of the helpers above.
const scratch = 8 << 10

// fileHead returns the hash of the last line of the file at path: "" when it is missing or empty.
func fileHead(path string) (string, error) {
	f, err := openRead(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	return tailHash(f, fi.Size(), make([]byte, scratch))
}
