package telemetry

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// Verification is what Verify found in one chain of files.
type Verification struct {
	Files []string `json:"files"`
	// Records counts the chained lines checked; Unchained the lines before the chain began
	// (records of versions that wrote none).
	Records   int `json:"records"`
	Unchained int `json:"unchained"`
	// Head is the last line's hash: what a daemon publishes as the chain's head.
	Head string `json:"head"`
	// Broken is the first link that does not hold: nil when the chain is whole.
	Broken *Break `json:"broken,omitempty"`
	// Heads are the published heads asked about (Verify's heads) that the chain does not hold:
	// records from there on were rewritten or cut.
	MissingHeads []string `json:"missing_heads,omitempty"`
}

// Break is a link of the chain that does not hold.
type Break struct {
	File string `json:"file"`
	Line int    `json:"line"` // 1-based, as sed -n Np counts
	RID  string `json:"rid,omitempty"`
	// Problem says what is wrong there, in words.
	Problem string `json:"problem"`
}

func (b Break) String() string {
	s := fmt.Sprintf("%s line %d", b.File, b.Line)
	if b.RID != "" {
		s += " (record " + b.RID + ")"
	}
	return s + ": " + b.Problem
}

// Verify checks the chain through files, oldest first (as Files lists a log), stopping at the
// first link that does not hold; the first line of the oldest file may link to a record rotated
// away. heads are chain heads published earlier (a heartbeat's, status's): each must be the
// hash of a line of the chain. Memory stays bounded whatever the files hold.
func Verify(files []string, heads ...string) (Verification, error) {
	v := Verification{Files: files}
	want := map[string]bool{}
	for _, h := range heads {
		want[h] = true
	}
	var prev, prevFile string
	chained := false
	for i, name := range files {
		f, err := openRead(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return v, fmt.Errorf("verify the decision log: %w", err)
		}
		b, err := verifyFile(f, name, i == len(files)-1, &v, &prev, &prevFile, &chained, want)
		f.Close()
		if err != nil {
			return v, fmt.Errorf("verify the decision log %s: %w", name, err)
		}
		if b != nil {
			v.Broken = b
			break
		}
	}
	v.Head = prev
	for h := range want {
		v.MissingHeads = append(v.MissingHeads, h)
	}
	slices.Sort(v.MissingHeads)
	return v, nil
}

func verifyFile(f *os.File, name string, live bool, v *Verification, prev, prevFile *string, chained *bool, want map[string]bool) (*Break, error) {
	br := bufio.NewReaderSize(f, 1<<20)
	for n := 1; ; n++ {
		line, err := readLine(br, maxRecordLine)
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return nil, nil
		}
		if errors.Is(err, ErrLineTooLong) {
			return &Break{File: name, Line: n, Problem: "a line over 16 MiB, which no writer of the log makes"}, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if errors.Is(err, io.EOF) && live {
			return nil, nil // the live file's last line is still being written
		}
		if errors.Is(err, io.EOF) {
			return &Break{File: name, Line: n, RID: ridOf(line), Problem: "the file ends in the middle of a line"}, nil
		}
		if b := checkLink(line, name, n, v, *prev, *prevFile, chained); b != nil {
			return b, nil
		}
		*prev, *prevFile = LineHash(line), name
		delete(want, *prev)
	}
}

// checkLink judges one line against the hash of the line before it ("" at the start).
func checkLink(line []byte, name string, n int, v *Verification, prev, prevFile string, chained *bool) *Break {
	at := func(problem string) *Break { return &Break{File: name, Line: n, RID: ridOf(line), Problem: problem} }
	link, ok := linkOf(line)
	if !json.Valid(line) || len(line) == 0 || line[0] != '{' {
		return at("not a record: the line was damaged, or written by something other than coworkbridge")
	}
	switch {
	case !ok && *chained:
		return at("a record without its link after linked ones: inserted, or its link stripped")
	case !ok:
		v.Unchained++
	case prev != "" && link != prev && prevFile != name:
		return at(fmt.Sprintf("does not follow the last record of %s: records were cut or changed at the rotation", prevFile))
	case prev != "" && link != prev:
		return at("does not follow the line before it: a record was removed, inserted or changed just before this one")
	default:
		*chained = true
		v.Records++
	}
	return nil
}

func ridOf(line []byte) string {
	var r struct {
		RID string `json:"rid"`
	}
	if json.Unmarshal(line, &r) != nil {
		return ""
	}
	return r.RID
}
