package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// RecentRIDs returns the request ids of the last records in the log at path, reading at most
// max bytes from the end of the live file and, if it is shorter, of the newest rotated one. The
// daemon uses it at start to skip events it recorded just before a crash, before their spool
// offsets were committed: a replay then duplicates nothing.
func RecentRIDs(path string, max int64) (map[string]bool, error) {
	rids := map[string]bool{}
	left := max
	for _, p := range []string{path, path + ".1"} {
		n, err := tailRIDs(p, left, rids)
		if err != nil {
			return rids, err
		}
		if left -= n; left <= 0 {
			break
		}
	}
	return rids, nil
}

// tailRIDs adds the rids of the whole lines in the last limit bytes of path and returns how many
// bytes it read.
func tailRIDs(path string, limit int64, rids map[string]bool) (int64, error) {
	f, err := openRead(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read recent decisions: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("read recent decisions: %w", err)
	}
	start := max(fi.Size()-limit, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, start, fi.Size()-start))
	if err != nil {
		return 0, fmt.Errorf("read recent decisions %s: %w", path, err)
	}
	if start > 0 { // the first line is cut: skip to the next whole one
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	for line := range bytes.Lines(data) {
		var r struct {
			RID string `json:"rid"`
		}
		if json.Unmarshal(line, &r) == nil && r.RID != "" {
			rids[r.RID] = true
		}
	}
	return int64(len(data)), nil
}
