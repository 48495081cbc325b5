package telemetry

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLinesSkipsBlankAndOverlongLinesAndKeepsReading(t *testing.T) {
	long := strings.Repeat("x", 100)
	in := "one\n\n  \r\n" + long + "\ntwo\r\n" + long + long + "\nthree"
	var got []string
	tooLong := 0
	for line, err := range Lines(strings.NewReader(in), 64) {
		switch {
		case errors.Is(err, ErrLineTooLong):
			tooLong++
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, string(line))
		}
	}
	if !slices.Equal(got, []string{"one", "two", "three"}) || tooLong != 2 {
		t.Errorf("lines %q, %d too long; want one two three and 2", got, tooLong)
	}
}

func TestLinesStopsWhenTheLoopDoes(t *testing.T) {
	n := 0
	for range Lines(strings.NewReader("a\nb\nc\n"), 10) {
		n++
		break
	}
	if n != 1 {
		t.Errorf("%d lines after break", n)
	}
}

func FuzzLines(f *testing.F) {
	f.Add("a\nb\n", 4)
	f.Add("\n\n\r\nxxxxxxxxxxxxxxxxx\n", 3)
	f.Fuzz(func(t *testing.T, in string, max int) {
		if max < 1 || max > 1<<16 {
			return
		}
		for line, err := range Lines(strings.NewReader(in), max) {
			if err != nil && !errors.Is(err, ErrLineTooLong) {
				t.Fatal(err)
			}
			if len(line) > max || strings.ContainsAny(string(line), "\n") {
				t.Fatalf("line %q over %d or with a newline", line, max)
			}
		}
	})
}

func TestFilesListsRotatedFilesOldestFirstThenTheLog(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "decisions.jsonl")
	for _, name := range []string{"decisions.jsonl.1", "decisions.jsonl.2", "decisions.jsonl.10", "decisions.jsonl.x", "other.jsonl.1"} {
		os.WriteFile(filepath.Join(dir, name), nil, 0o600)
	}
	os.Mkdir(filepath.Join(dir, "decisions.jsonl.3"), 0o700) // not a file
	want := []string{log + ".10", log + ".2", log + ".1", log}
	if got := Files(log); !slices.Equal(got, want) {
		t.Errorf("Files = %q, want %q", got, want)
	}
}
