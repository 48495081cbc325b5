package telemetry

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

// A drop folder takes the records a hook could not put in the log itself: the log's lock was
// held past the wait (user mode), or the daemon that writes the log could not be reached (system
// mode, observe). Each record is one file named by its rid; the daemon imports them into the log
// and removes them. In system mode the folder is root's, sticky and writable by all (as /tmp),
// so a user can add files and remove only their own; the daemon then takes the user from the
// file's owner, which the kernel sets, never from what the file says.

// TransportDropped marks a record imported from a drop folder: written by a hook process that
// runs as the user, so everything in it but the user is that user's to say.
const TransportDropped = "host-hook-dropped"

// Bounds of one import: a drop folder is writable by the agent's identity.
const (
	maxDropBytes = 256 << 10
	maxDropFiles = 1000
)

var dropName = lazyregexp.New(`^[0-9a-f]{32}\.json$`)

// Drop writes rec into dir as its own file, for a daemon to import into the log.
func Drop(dir string, rec Record) error {
	if !dropName.MatchString(rec.RID + ".json") {
		return fmt.Errorf("drop a record: request id %q is not 32 hex digits", rec.RID)
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("drop record %s: %w", rec.RID, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, rec.RID+".json"), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("drop record %s into %s: %w", rec.RID, dir, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("drop record %s into %s: %w", rec.RID, dir, err)
	}
	return nil
}

// Imported says what one import did.
type Imported struct {
	Records int
	// Refused lists the files removed unread or unreadable, with why.
	Refused []string
}

// ImportDropped writes the records dropped in dir to the log, in one write, and removes their
// files; userOf names the owner of a file by uid (the record's user). A file that is not a
// record a hook could have dropped (a link, a pipe, a hard link, too large, not a record) is
// removed and listed. On a failed write every file stays for the next import.
func (l *Log) ImportDropped(dir string, userOf func(uid uint32) string) (Imported, error) {
	var im Imported
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return im, nil
	}
	if err != nil {
		return im, fmt.Errorf("read the drop folder %s: %w", dir, err)
	}
	var recs []Record
	var names []string
	for _, e := range entries[:min(len(entries), maxDropFiles)] {
		name := filepath.Join(dir, e.Name())
		rec, why := readDropped(name, userOf)
		if why != "" {
			im.Refused = append(im.Refused, e.Name()+": "+why)
			_ = os.Remove(name)
			continue
		}
		recs, names = append(recs, rec), append(names, name)
	}
	slices.SortStableFunc(recs, func(a, b Record) int { return a.TS.Compare(b.TS) })
	if err := l.WriteBatch(recs); err != nil {
		return im, err
	}
	for _, name := range names {
		_ = os.Remove(name)
	}
	im.Records = len(recs)
	return im, nil
}

// readDropped reads one dropped record; why says why it is refused.
func readDropped(name string, userOf func(uid uint32) string) (Record, string) {
	if !dropName.MatchString(filepath.Base(name)) {
		return Record{}, "not named as a hook names its record"
	}
	f, err := openRead(name)
	if err != nil {
		return Record{}, "not a regular file"
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Record{}, err.Error()
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return Record{}, "no owner known"
	case uint64(st.Nlink) > 1:
		return Record{}, "it has another name (a hard link)"
	case fi.Size() > maxDropBytes:
		return Record{}, fmt.Sprintf("%d bytes, more than a record", fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxDropBytes))
	if err != nil {
		return Record{}, err.Error()
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil || rec.RID+".json" != filepath.Base(name) {
		return Record{}, "not a record of its request id"
	}
	rec.Transport = TransportDropped
	rec.User = cmp.Or(userOf(st.Uid), fmt.Sprintf("uid %d", st.Uid))
	rec.Host = "" // this machine's, from the log's stamp
	if len(rec.Input) == 0 {
		rec.Input = json.RawMessage("null")
	}
	return rec, ""
}
