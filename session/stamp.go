package session

import (
	"io/fs"
	"syscall"
	"time"
)

// Stamp is what the file system says of an entry that changes whenever the entry does: its
// identity, type, size, and modification and change times. The change time is set by the kernel
// alone, at every write, rename or change of metadata, so equal stamps mean an unchanged entry
// (where the platform gives no change time, the other fields must do). The zero Stamp stands for
// an entry that is not there.
type Stamp struct {
	Dev, Ino     uint64
	Mode         fs.FileMode
	Size         int64
	Mod, Changed int64 // nanoseconds since the epoch
}

// StampOf is fi's stamp.
func StampOf(fi fs.FileInfo) Stamp {
	s := Stamp{Mode: fi.Mode(), Size: fi.Size(), Mod: fi.ModTime().UnixNano(), Changed: ChangeTime(fi).UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.Dev, s.Ino = uint64(st.Dev), uint64(st.Ino)
	}
	return s
}

// Stamps looks at each name without following a final link, and returns their stamps in order:
// the zero Stamp for a name that is not there or cannot be looked at.
func (s *Session) Stamps(names ...string) []Stamp {
	out := make([]Stamp, len(names))
	for i, name := range names {
		if fi, err := s.Lstat(name); err == nil {
			out[i] = StampOf(fi)
		}
	}
	return out
}

// Quiet remembers folders a look found nothing of interest in, each by its stamp as that look
// began: found with the same stamp, a folder holds the same entries (any entry made, removed or
// renamed in it changes the stamp), so it need not be listed again. An idle session's periodic
// looks are then one look per folder, not a listing. A folder changed within QuietAfter of the
// look is not noted: a file system's clock is coarse (a tick of the kernel's, a second on HFS+),
// and an entry made in the same tick as the stamp, after the listing, would leave the stamp as it
// was. The zero value is ready to use; it is not safe for concurrent use.
type Quiet struct{ m map[string]Stamp }

// QuietAfter is how long a folder must have been left unchanged before a look notes it quiet.
const QuietAfter = 2 * time.Second

// Unchanged reports whether dir, found now with stamp st, is as it was when last noted quiet.
func (q *Quiet) Unchanged(dir string, st Stamp) bool {
	return q != nil && st != (Stamp{}) && q.m[dir] == st
}

// Note records what a look at dir at now found, st being dir's stamp as the look began (taken
// before the listing, so that an entry made during it changes the stamp): quiet, or something
// to look at again.
func (q *Quiet) Note(dir string, st Stamp, quiet bool, now time.Time) {
	settled := now.UnixNano()-max(st.Mod, st.Changed) > int64(QuietAfter)
	switch {
	case q == nil:
	case quiet && settled && st != (Stamp{}):
		if q.m == nil {
			q.m = map[string]Stamp{}
		}
		q.m[dir] = st
	default:
		delete(q.m, dir)
	}
}

// StampOf is the stamp of the entry name (not following a final link), or the zero Stamp.
func (s *Session) StampOf(name string) Stamp {
	fi, err := s.Lstat(name)
	if err != nil {
		return Stamp{}
	}
	return StampOf(fi)
}
