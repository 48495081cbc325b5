package session

import (
	"io/fs"
	"syscall"
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
