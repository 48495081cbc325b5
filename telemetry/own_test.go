package telemetry

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// plant puts something the log did not make at the log's name and returns the file outside the
// log folder that the plant would lead a writer to, if any.
type plant func(t *testing.T, logPath, outside string)

func TestTheWriterNeverWritesThroughAnythingPlantedAtTheLogsName(t *testing.T) {
	cases := map[string]plant{
		"a link to a file elsewhere": func(t *testing.T, logPath, outside string) {
			must(t, os.WriteFile(outside, nil, 0o600))
			must(t, os.Symlink(outside, logPath))
		},
		"a link to /dev/null": func(t *testing.T, logPath, _ string) {
			must(t, os.Symlink(os.DevNull, logPath))
		},
		"a dangling link": func(t *testing.T, logPath, outside string) {
			must(t, os.Symlink(outside, logPath))
		},
		"a named pipe": func(t *testing.T, logPath, _ string) {
			must(t, syscall.Mkfifo(logPath, 0o600))
		},
		"a hard link to a file elsewhere": func(t *testing.T, logPath, outside string) {
			must(t, os.WriteFile(outside, nil, 0o600))
			must(t, os.Link(outside, logPath))
		},
		"a folder": func(t *testing.T, logPath, _ string) {
			must(t, os.Mkdir(logPath, 0o700))
		},
	}
	for name, put := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "logs")
			must(t, os.Mkdir(dir, 0o700))
			logPath := filepath.Join(dir, "decisions.jsonl")
			outside := filepath.Join(t.TempDir(), "agent-owned.txt")
			put(t, logPath, outside)
			var breaks []string
			log := Open(Options{Path: logPath, OnBreak: func(p string) { breaks = append(breaks, p) }})
			defer log.Close()
			if err := log.Write(Record{RID: "r1", Input: []byte("null")}); err != nil {
				t.Fatalf("the write failed: %v", err)
			}
			if b, err := os.ReadFile(outside); err == nil && len(b) > 0 {
				t.Fatalf("the record went through the plant into %s: %q", outside, b)
			}
			recs, err := ReadFile(logPath)
			if err != nil || len(recs) != 1 {
				t.Fatalf("the log at its name holds %d records (%v), want the new one", len(recs), err)
			}
			if fi, err := os.Lstat(logPath); err != nil || !fi.Mode().IsRegular() || foreignness(fi) != "" {
				t.Fatalf("the log's name holds %v (%v), want a regular file of ours", fi, err)
			}
			if len(breaks) == 0 || !strings.Contains(breaks[0], "not a file coworkbridge made") {
				t.Fatalf("the plant was reported as %q, want a report naming it", breaks)
			}
			aside, _ := filepath.Glob(logPath + ".refused-*")
			if len(aside) != 1 {
				t.Fatalf("the plant was not kept aside as evidence: %v", aside)
			}
		})
	}
}

func TestTheWriterSetsAsideALinkedLogFolderAndWritesInARealOne(t *testing.T) {
	base := t.TempDir()
	elsewhere := filepath.Join(base, "outputs")
	must(t, os.Mkdir(elsewhere, 0o700))
	dir := filepath.Join(base, "logs")
	must(t, os.Symlink(elsewhere, dir))
	var breaks []string
	log := Open(Options{Path: filepath.Join(dir, "decisions.jsonl"), OnBreak: func(p string) { breaks = append(breaks, p) }})
	defer log.Close()
	if err := log.Write(Record{RID: "r1", Input: []byte("null")}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("the writer made %v in the folder the link pointed to", entries)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("the log folder is %v (%v), want a real folder", fi, err)
	}
	if len(breaks) == 0 {
		t.Fatal("the linked folder was not reported")
	}
}

func TestTheLockFileLinkedElsewhereIsSetAsideNotFollowed(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "victim")
	must(t, os.Symlink(outside, filepath.Join(dir, "decisions.jsonl.lock")))
	log := Open(Options{Path: filepath.Join(dir, "decisions.jsonl")})
	defer log.Close()
	if err := log.Write(Record{RID: "r1", Input: []byte("null")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(outside); err == nil {
		t.Fatal("the writer created the file a planted lock link pointed to")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestAReadGroupMakesTheLogsFilesReadableByItAndOnlyIt(t *testing.T) {
	gid := os.Getgid()
	dir := t.TempDir()
	path := filepath.Join(dir, "decisions.jsonl")
	// A file made before the group was configured is brought in line at its next open.
	must(t, os.WriteFile(path, nil, 0o600))
	log := Open(Options{Path: path, GroupRead: true, ReadGID: gid, MaxFileBytes: 600, MaxFiles: 2})
	defer log.Close()
	for i := range 5 { // past a rotation, and a deny for the retained log
		must(t, log.Write(Record{RID: fmt.Sprint(i), Decision: "deny", Input: []byte(`{"command":"` + strings.Repeat("x", 200) + `"}`)}))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "decisions.*"))
	if !slices.Contains(files, RetainedPath(path)) || !slices.Contains(files, path+".1") {
		t.Fatalf("the test meant to make a rotated and a retained file: %v", files)
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".lock") {
			continue
		}
		fi, err := os.Stat(f)
		must(t, err)
		if fi.Mode().Perm() != 0o640 || int(fi.Sys().(*syscall.Stat_t).Gid) != gid {
			t.Errorf("%s: mode %v group %d, want 0640 and group %d", filepath.Base(f), fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Gid, gid)
		}
	}
	log.Close()
	// Without the group, a file is the owner's alone again.
	log = Open(Options{Path: path})
	must(t, log.Write(Record{RID: "x", Input: []byte("null")}))
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("without a read group the log is %v, want 0600", fi.Mode().Perm())
	}
}
