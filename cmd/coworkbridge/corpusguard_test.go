package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/corpus"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
)

// verdictsFile records every development corpus row's verdict under the default policy on a Mac
// whose home is /Users/ada.
const verdictsFile = "testdata/corpus-verdicts.txt"

// A change to the classifier that moves any development corpus verdict fails here until the
// record is updated (go test ./cmd/coworkbridge -run CorpusVerdicts -update) and the diff is read:
// a family lost shows as the rows that moved, before it lands.
func TestDevelopmentCorpusVerdictsAreTheRecordedOnes(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "corpus")
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		cbtest.NoShared(t, "the development corpora", fmt.Errorf("no corpus in %s: %v", dir, err))
	}
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	mac, err := previewed("darwin", "/Users/ada")
	if err != nil {
		t.Fatal(err)
	}
	used, err := policyFor(mac, "")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		s, err := corpus.Measure(context.Background(), used.Classifier, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range s.Verdicts {
			fmt.Fprintf(&got, "%s:%d %s %s %s %s\n", filepath.Base(file), v.Line, v.ID, v.Expect, v.Got, v.Rule)
		}
	}
	if *update {
		if err := os.WriteFile(verdictsFile, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(verdictsFile)
	if err != nil {
		t.Fatalf("%v: record it with go test ./cmd/coworkbridge -run CorpusVerdicts -update", err)
	}
	if bytes.Equal(want, got.Bytes()) {
		return
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(got.String(), "\n")
	var moved []string
	for i := range max(len(wl), len(gl)) {
		w, g := at(wl, i), at(gl, i)
		if w != g {
			moved = append(moved, fmt.Sprintf("  was %s\n  now %s", w, g))
		}
	}
	t.Errorf("%d development corpus verdicts moved; read them, then record them with go test ./cmd/coworkbridge -run CorpusVerdicts -update:\n%s",
		len(moved), strings.Join(moved[:min(len(moved), 40)], "\n"))
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(none)"
}
