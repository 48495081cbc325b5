// Package spool reads an append-only JSON-lines file from a persisted position: complete,
// newline-terminated lines only, never more than a bounded amount of one line in memory, and a
// restart from zero when the file was replaced or truncated.
//
// It does not decode lines (see claudehook) and does not decide when a position may be
// committed: the caller commits one only after the work it covers is done (see Store).
package spool

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"syscall"
)

// Identity is a file's device and inode: a spool renamed aside keeps it, a new one gets another.
type Identity struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// IdentityOf returns the identity of an open file's description.
func IdentityOf(fi os.FileInfo) (Identity, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Identity{}, errors.New("file identity unavailable on this platform")
	}
	return Identity{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, nil
}

// Position is where reading resumes: the file it applies to and the offset past the last line
// fully handled.
type Position struct {
	ID     Identity `json:"id"`
	Offset int64    `json:"offset"`
	// Head fingerprints the file's first bytes. Filesystems reuse inode numbers, so a spool
	// deleted and recreated between two reads can carry the old identity; its different first
	// line (each starts with a random request id) gives it away.
	Head uint64 `json:"head,omitempty"`
	// Tail, where a caller keeps it, fingerprints the bytes just before Offset, so that an edit
	// to what was read can be told (see transcript.Follower); the Reader neither sets nor checks
	// it.
	Tail uint64 `json:"tail,omitempty"`
}

// headLen is how many leading bytes Head covers (fewer while the file is shorter).
const headLen = 64

// Line is one complete line.
type Line struct {
	// Data is the line without its newline; nil for an oversized line.
	Data []byte
	// Oversized: the line was longer than the limit and was skipped to its newline. Head holds
	// its first bytes, enough to recover the request id the hook writes first.
	Oversized bool
	Head      []byte
	Size      int64
	// End is the offset just past the line's newline: the position to commit once it is handled.
	End int64
}

// headBytes is how much of an oversized line is kept for its request id.
const headBytes = 256

// chunk is the largest read; minChunk the smallest buffer a reader reads into.
const (
	chunk    = 64 << 10
	minChunk = 4 << 10
)

// Reader reads complete lines from one open spool.
type Reader struct {
	f   *os.File
	rd  io.ReaderAt // f, or a wrapper that counts in tests
	id  Identity
	max int64
	// off is the offset of the next unread line; pending holds bytes read past it that do not
	// yet end in a newline.
	off     int64
	pending []byte
	// skipping: inside an oversized line whose newline has not been seen; scanned is how far.
	skipping bool
	head     []byte
	scanned  int64
	// done: an oversized line has been scanned to its newline and waits to be returned.
	done bool
	// head64 fingerprints the first headOf bytes.
	head64 uint64
	headOf int64
	// clearTo: the bytes from off up to it are known to hold no newline, so only what lies past
	// it needs scanning (see Partial).
	clearTo int64
	// buf is the one buffer the reader reads into, made at its first read; unread is how much
	// the file held past the position when the reader was made, which sizes it.
	buf    []byte
	unread int64
}

// Partial describes an unfinished last line: the bytes from Offset up to Clear hold no newline.
// Handed to the next Reader on the same file, it spares that reader scanning them again, so that
// a line growing a byte at a time costs work in proportion to what is appended, not to its
// length times the number of appends.
type Partial struct {
	ID     Identity
	Offset int64
	Clear  int64
}

// Partial returns what this reader learnt about an unfinished last line; the zero value when it
// saw none.
func (r *Reader) Partial() Partial {
	end := r.off + int64(len(r.pending))
	if r.skipping {
		end = r.scanned
	}
	end = max(end, r.clearTo)
	if end <= r.off {
		return Partial{}
	}
	return Partial{ID: r.id, Offset: r.off, Clear: end}
}

// Resume takes a Partial from an earlier reader of the same file. One that does not apply to
// this reader's file and position is ignored.
func (r *Reader) Resume(p Partial) {
	if p.ID != r.id || p.Offset != r.off || p.Clear <= r.off || r.skipping || len(r.pending) > 0 {
		return
	}
	if fi, err := r.f.Stat(); err != nil || fi.Size() < p.Clear {
		return
	}
	r.clearTo = p.Clear
}

// Reset says why a Reader did not resume at the given position.
type Reset string

// Reasons a reader starts again from zero.
const (
	NoReset   Reset = ""
	Replaced  Reset = "replaced" // another file now has the name
	Truncated Reset = "truncated"
)

// NewReader reads f from pos, or from zero when f is not the file pos was taken on, or is now
// shorter than pos. maxLine bounds a line; longer ones are reported Oversized.
func NewReader(f *os.File, pos Position, maxLine int64) (*Reader, Reset, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, NoReset, fmt.Errorf("stat spool: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, NoReset, fmt.Errorf("spool is not a regular file (%v)", fi.Mode().Type())
	}
	id, err := IdentityOf(fi)
	if err != nil {
		return nil, NoReset, err
	}
	r := &Reader{f: f, rd: f, id: id, max: maxLine, off: pos.Offset}
	reset := NoReset
	switch {
	case pos.ID != id && (pos.ID != Identity{}):
		reset, r.off = Replaced, 0
	case fi.Size() < pos.Offset:
		reset, r.off = Truncated, 0
	case pos.ID == Identity{}:
		r.off = 0
	case pos.Offset > 0 && pos.Head != 0 && r.fingerprint(min(pos.Offset, headLen)) != pos.Head:
		reset, r.off = Replaced, 0
	}
	r.unread = fi.Size() - r.off
	return r, reset, nil
}

// fingerprint hashes the file's first n bytes (FNV-1a); 0 when they cannot be read.
func (r *Reader) fingerprint(n int64) uint64 {
	buf := make([]byte, n)
	if _, err := r.rd.ReadAt(buf, 0); err != nil {
		return 0
	}
	h := fnv.New64a()
	h.Write(buf)
	return h.Sum64() | 1 // never 0, which means "unknown"
}

// Position is where the next unread line starts.
func (r *Reader) Position() Position {
	n := min(r.off, headLen)
	if n > 0 && r.headOf != n {
		r.head64, r.headOf = r.fingerprint(n), n
	}
	return Position{ID: r.id, Offset: r.off, Head: r.head64}
}

// Identity is the identity of the file being read.
func (r *Reader) Identity() Identity { return r.id }

// Next returns the next complete line, or io.EOF when there is none yet; a partial last line
// waits for its newline. Memory held for one line never exceeds the limit plus one chunk.
func (r *Reader) Next() (Line, error) {
	if r.clearTo > r.off {
		if err := r.skipClear(); err != nil {
			return Line{}, err
		}
	}
	for {
		if l, ok := r.take(); ok {
			return l, nil
		}
		buf := r.readBuf()
		n, err := r.rd.ReadAt(buf, r.readFrom())
		if n > 0 {
			r.feed(buf[:n])
			continue
		}
		if err == nil || errors.Is(err, io.EOF) {
			return Line{}, io.EOF
		}
		return Line{}, fmt.Errorf("read spool: %w", err)
	}
}

// skipClear scans only past the part known to hold no newline. Without a newline there, nothing
// is read into memory; with one, the line is read from its start as usual.
func (r *Reader) skipClear() error {
	from := r.clearTo
	r.clearTo = 0
	buf := r.readBuf()
	for {
		n, err := r.rd.ReadAt(buf, from)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			if from+int64(i)-r.off > r.max {
				r.startSkipping(from + int64(i))
			}
			return nil // the line is complete: read it from its start
		}
		from += int64(n)
		if n > 0 {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read spool: %w", err)
		}
		if from-r.off > r.max {
			r.startSkipping(from)
		} else {
			r.clearTo = from
		}
		return io.EOF
	}
}

// readBuf is the reader's buffer. A pass usually finds one event of a few hundred bytes: a
// buffer of what the file held, within [minChunk, chunk], spares it clearing and collecting
// 64 KiB each time. Every use copies out what it keeps (feed, take), so the buffer is reused.
func (r *Reader) readBuf() []byte {
	if r.buf == nil {
		r.buf = make([]byte, min(chunk, max(minChunk, r.unread)))
	}
	return r.buf
}

// startSkipping treats the line at off as oversized, scanned without a newline up to scanned.
func (r *Reader) startSkipping(scanned int64) {
	head := make([]byte, headBytes)
	n, _ := r.rd.ReadAt(head, r.off)
	r.head = head[:n]
	r.pending = nil
	r.skipping = true
	r.scanned = scanned
}

// readFrom is the file offset the next read starts at.
func (r *Reader) readFrom() int64 {
	if r.skipping {
		return r.scanned
	}
	return r.off + int64(len(r.pending))
}

func (r *Reader) feed(b []byte) {
	if r.skipping {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			r.scanned += int64(i) + 1
			r.pending = append(r.pending[:0], b[i+1:]...) // lines after the oversized one
			r.skipping = false
			r.done = true
			return
		}
		r.scanned += int64(len(b))
		return
	}
	r.pending = append(r.pending, b...)
	if i := bytes.IndexByte(r.pending, '\n'); (i < 0 && int64(len(r.pending)) > r.max) || int64(i) > r.max {
		// Too long: keep the head for the request id, drop the rest, scan on for the newline.
		r.head = append([]byte(nil), r.pending[:min(len(r.pending), headBytes)]...)
		if i >= 0 {
			r.scanned = r.off + int64(i) + 1
			r.pending = append([]byte(nil), r.pending[i+1:]...)
			r.done = true
			return
		}
		r.scanned = r.off + int64(len(r.pending))
		r.pending = nil
		r.skipping = true
	}
}

// take returns a complete line from what has been read, if there is one.
func (r *Reader) take() (Line, bool) {
	if r.done {
		r.done = false
		l := Line{Oversized: true, Head: r.head, Size: r.scanned - r.off - 1, End: r.scanned}
		r.off, r.head = r.scanned, nil
		return l, true
	}
	if r.skipping {
		return Line{}, false
	}
	i := bytes.IndexByte(r.pending, '\n')
	if i < 0 {
		return Line{}, false
	}
	if int64(i) > r.max {
		r.feed(nil) // handled as oversized
		return r.take()
	}
	data := append([]byte(nil), r.pending[:i]...)
	r.pending = r.pending[i+1:]
	r.off += int64(i) + 1
	return Line{Data: data, Size: int64(i), End: r.off}, true
}
