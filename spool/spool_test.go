package spool

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func spoolFile(t testing.TB, content string) (*os.File, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, p
}

func appendTo(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(s)
	f.Close()
}

func drain(t *testing.T, r *Reader) []Line {
	t.Helper()
	var out []Line
	for {
		l, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
}

func TestPartialTrailingLineWaitsForItsNewline(t *testing.T) {
	f, p := spoolFile(t, "one\ntwo\nthr")
	r, _, err := NewReader(f, Position{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	lines := drain(t, r)
	if len(lines) != 2 || string(lines[1].Data) != "two" || r.Position().Offset != 8 {
		t.Fatalf("lines %+v position %+v", lines, r.Position())
	}
	appendTo(t, p, "ee\nfour\n")
	lines = drain(t, r)
	if len(lines) != 2 || string(lines[0].Data) != "three" || lines[1].End != 19 {
		t.Fatalf("after append: %+v", lines)
	}
}

func TestResumesAtAPositionAndRestartsOnReplaceOrTruncate(t *testing.T) {
	f, p := spoolFile(t, "a\nb\nc\n")
	r, _, _ := NewReader(f, Position{}, 100)
	drain(t, r)
	pos := r.Position()

	f2, _ := os.Open(p)
	defer f2.Close()
	r2, reset, _ := NewReader(f2, Position{ID: pos.ID, Offset: 2}, 100)
	if lines := drain(t, r2); reset != NoReset || len(lines) != 2 || string(lines[0].Data) != "b" {
		t.Fatalf("resume: %q %+v", reset, lines)
	}

	os.Truncate(p, 2)
	f3, _ := os.Open(p)
	defer f3.Close()
	if r3, reset, _ := NewReader(f3, pos, 100); reset != Truncated || r3.Position().Offset != 0 {
		t.Fatalf("truncated: %q %+v", reset, r3.Position())
	}

	os.Rename(p, p+".old")
	os.WriteFile(p, []byte("new\n"), 0o600)
	f4, _ := os.Open(p)
	defer f4.Close()
	r4, reset, _ := NewReader(f4, pos, 100)
	if lines := drain(t, r4); reset != Replaced || len(lines) != 1 || string(lines[0].Data) != "new" {
		t.Fatalf("replaced: %q %+v", reset, lines)
	}
}

func TestOversizedLinesAreSkippedWithTheirHead(t *testing.T) {
	long := `{"v":1,"rid":"0123456789abcdef0123456789abcdef","event":` + strings.Repeat("x", 5000) + "}"
	f, _ := spoolFile(t, "ok\n"+long+"\nafter\n")
	r, _, _ := NewReader(f, Position{}, 1000)
	lines := drain(t, r)
	if len(lines) != 3 || !lines[1].Oversized || lines[1].Data != nil || string(lines[2].Data) != "after" {
		t.Fatalf("%+v", lines)
	}
	if !bytes.HasPrefix(lines[1].Head, []byte(`{"v":1,"rid":"0123456789abcdef0123456789abcdef"`)) || lines[1].Size != int64(len(long)) {
		t.Errorf("head %q size %d", lines[1].Head, lines[1].Size)
	}
	if lines[2].End != int64(3+len(long)+1+6) {
		t.Errorf("end %d", lines[2].End)
	}
}

// A 100 MB line with no newline is scanned in bounded memory; the position does not move past it
// until its newline arrives.
func TestHugeLineWithoutNewlineInBoundedMemory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "events.jsonl")
	w, _ := os.Create(p)
	w.WriteString("first\n")
	block := bytes.Repeat([]byte("y"), 1<<20)
	for range 100 {
		w.Write(block)
	}
	w.Close()
	f, _ := os.Open(p)
	defer f.Close()
	r, _, _ := NewReader(f, Position{}, 4<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	lines := drain(t, r)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if len(lines) != 1 || r.Position().Offset != 6 {
		t.Fatalf("lines %d position %+v", len(lines), r.Position())
	}
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 16<<20 {
		t.Errorf("heap grew by %d bytes reading a 100 MB line", grew)
	}
	appendTo(t, p, "\nlast\n")
	lines = drain(t, r)
	if len(lines) != 2 || !lines[0].Oversized || string(lines[1].Data) != "last" {
		t.Fatalf("after the newline: %+v", lines)
	}
}

func TestRefusesANonRegularFile(t *testing.T) {
	f, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, err := NewReader(f, Position{}, 10); err == nil {
		t.Error("a directory was accepted as a spool")
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), uint8(2))
	f.Add([]byte(strings.Repeat("z", 300)+"\nq\n"), uint8(50))
	f.Fuzz(func(t *testing.T, data []byte, max uint8) {
		file, _ := spoolFile(t, string(data))
		r, _, err := NewReader(file, Position{}, int64(max)+1)
		if err != nil {
			t.Fatal(err)
		}
		var rebuilt []byte
		var last int64
		for {
			l, err := r.Next()
			if err != nil {
				break
			}
			if l.End <= last || l.End > int64(len(data)) || data[l.End-1] != '\n' {
				t.Fatalf("bad end %d after %d", l.End, last)
			}
			if !l.Oversized {
				if int64(len(l.Data)) > int64(max)+1 {
					t.Fatalf("line of %d bytes over the limit %d", len(l.Data), int64(max)+1)
				}
				if !bytes.Equal(l.Data, data[last:l.End-1]) {
					t.Fatalf("line %q is not the file's bytes %q", l.Data, data[last:l.End-1])
				}
			}
			rebuilt = append(rebuilt, data[last:l.End]...)
			last = l.End
		}
		if want := data[:bytes.LastIndexByte(data, '\n')+1]; !bytes.Equal(rebuilt, want) {
			t.Fatalf("lines do not cover the complete part of the file")
		}
	})
}

// Filesystems reuse inode numbers: a spool deleted and recreated between two reads may carry the
// old identity, and only its first bytes tell it apart.
func TestReplacedFileWithAReusedIdentityIsCaughtByItsHead(t *testing.T) {
	f, _ := spoolFile(t, `{"v":1,"rid":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`+"\n")
	r, _, _ := NewReader(f, Position{}, 100)
	drain(t, r)
	pos := r.Position()
	if pos.Head == 0 {
		t.Fatal("no head fingerprint in the position")
	}
	// Same file, same head: resumes.
	if r2, reset, _ := NewReader(f, pos, 100); reset != NoReset || r2.Position().Offset != pos.Offset {
		t.Errorf("resume on the same file: reset %q offset %d", reset, r2.Position().Offset)
	}
	// Another file under the same identity (as after inode reuse): starts over.
	g, _ := spoolFile(t, `{"v":1,"rid":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}`+"\nmore\n")
	id, _, _ := NewReader(g, Position{}, 100)
	reused := Position{ID: id.Identity(), Offset: pos.Offset, Head: pos.Head}
	if r3, reset, _ := NewReader(g, reused, 100); reset != Replaced || r3.Position().Offset != 0 {
		t.Errorf("reused identity: reset %q offset %d, want a restart from zero", reset, r3.Position().Offset)
	}
}

// A reader sizes its buffer by what the file held when it was made: lines appended since, far
// longer than that buffer, still come out whole.
func TestLinesLongerThanTheReadersFirstSizeComeOutWhole(t *testing.T) {
	f, p := spoolFile(t, "")
	r, _, err := NewReader(f, Position{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 3*chunk+17)
	appendTo(t, p, "short\n"+long+"\n"+"tail\n")
	lines := drain(t, r)
	if len(lines) != 3 || string(lines[0].Data) != "short" || string(lines[1].Data) != long || string(lines[2].Data) != "tail" {
		t.Fatalf("got %d lines", len(lines))
	}
	if got, want := r.Position().Offset, int64(len("short\n")+len(long)+1+len("tail\n")); got != want {
		t.Errorf("position %d, want %d", got, want)
	}
}
