package spool

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

// countingReader counts the bytes a Reader takes from its file.
type countingReader struct {
	r io.ReaderAt
	n *int64
}

func (c countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	*c.n += int64(n)
	return n, err
}

// readRounds reads the file as the collector does after each append: a new reader from the
// committed position, resumed with what the previous one learnt. It returns the lines and the
// bytes read in all.
func readRounds(t *testing.T, p string, pos *Position, partial *Partial, max int64, read *int64) []Line {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, _, err := NewReader(f, *pos, max)
	if err != nil {
		t.Fatal(err)
	}
	r.rd = countingReader{f, read}
	r.Resume(*partial)
	lines := drain(t, r)
	*pos, *partial = r.Position(), r.Partial()
	return lines
}

func TestAnUnfinishedLineGrowingByteByByteIsNotRescannedOnEachAppend(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int64
	}{{"within the limit", 1 << 20}, {"oversized", 1000}} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := spoolFile(t, "first\n")
			var pos Position
			var partial Partial
			var read int64
			if got := readRounds(t, p, &pos, &partial, tc.max, &read); len(got) != 1 {
				t.Fatalf("want the first line, got %d lines", len(got))
			}
			const appends = 3000
			chunkOf := strings.Repeat("x", 20)
			for range appends {
				appendTo(t, p, chunkOf)
				if got := readRounds(t, p, &pos, &partial, tc.max, &read); len(got) != 0 {
					t.Fatalf("an unfinished line was returned: %+v", got[0])
				}
			}
			appendTo(t, p, "\nlast\n")
			got := readRounds(t, p, &pos, &partial, tc.max, &read)
			if len(got) != 2 || string(got[1].Data) != "last" {
				t.Fatalf("lines after the long one: %d", len(got))
			}
			long := got[0]
			if want := int64(appends * len(chunkOf)); long.Size != want {
				t.Errorf("long line size %d, want %d", long.Size, want)
			}
			if long.Oversized != (tc.max < long.Size) {
				t.Errorf("oversized = %v with a limit of %d", long.Oversized, tc.max)
			}
			fi, _ := os.Stat(p)
			// Each byte is scanned once while the line grows and once more when it is read
			// whole, plus an oversized line's head (256 bytes) once a round; rescanning on every
			// append would be about appends/2 times the size.
			if read > 3*fi.Size()+appends*headBytes {
				t.Errorf("read %d bytes for a %d-byte file over %d appends", read, fi.Size(), appends)
			}
		})
	}
}

func TestAPartialFromAnotherFileOrPositionIsIgnored(t *testing.T) {
	f, _ := spoolFile(t, "abc\ndef")
	r, _, _ := NewReader(f, Position{}, 100)
	r.Resume(Partial{ID: Identity{Dev: 1, Ino: 2}, Offset: 0, Clear: 7})
	r.Resume(Partial{ID: r.Identity(), Offset: 4, Clear: 7})
	r.Resume(Partial{ID: r.Identity(), Offset: 0, Clear: 1 << 30}) // beyond the file
	if lines := drain(t, r); len(lines) != 1 || string(lines[0].Data) != "abc" {
		t.Fatalf("lines %+v", lines)
	}
}

// Reading in rounds, resumed from partials, gives exactly the lines one read gives.
func FuzzReaderResumed(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), uint8(2), []byte{1, 3, 2})
	f.Add([]byte(strings.Repeat("z", 300)+"\nq\n"), uint8(50), []byte{100, 7, 200})
	f.Fuzz(func(t *testing.T, data []byte, max uint8, cuts []byte) {
		limit := int64(max) + 1
		whole, _ := spoolFile(t, string(data))
		r, _, _ := NewReader(whole, Position{}, limit)
		want := drain(t, r)

		_, p := spoolFile(t, "")
		var pos Position
		var partial Partial
		var read int64
		var got []Line
		rest := data
		for _, c := range cuts {
			n := min(int(c), len(rest))
			appendTo(t, p, string(rest[:n]))
			rest = rest[n:]
			got = append(got, readRounds(t, p, &pos, &partial, limit, &read)...)
		}
		appendTo(t, p, string(rest))
		got = append(got, readRounds(t, p, &pos, &partial, limit, &read)...)
		if len(got) != len(want) {
			t.Fatalf("%d lines in rounds, %d at once", len(got), len(want))
		}
		for i := range want {
			if got[i].End != want[i].End || got[i].Oversized != want[i].Oversized || !bytes.Equal(got[i].Data, want[i].Data) {
				t.Fatalf("line %d: %+v in rounds, %+v at once", i, got[i], want[i])
			}
		}
	})
}
