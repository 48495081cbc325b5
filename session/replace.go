package session

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// ErrNoExchange: the platform or the file system cannot swap two names in one step.
var ErrNoExchange = errors.New("atomic exchange not supported")

// Replace puts data in place of name, which must exist as a regular file: the new content is
// written and synced under a temporary name beside it, the two names are swapped in one step
// (renameat2 RENAME_EXCHANGE on Linux, renamex_np RENAME_SWAP on macOS), and the temporary name,
// which then holds the old content, is removed.
//
// Unlike WriteFile, Replace never brings back a name that is gone: if name was removed meanwhile
// the swap fails and the result is fs.ErrNotExist. A repair made this way cannot undo a removal in
// progress, so it need not wait for one to end. Where the file system cannot swap, Replace falls
// back to checking that name exists and renaming over it (a race of microseconds remains).
func (s *Session) Replace(name string, data []byte, perm fs.FileMode) error {
	fi, err := s.Lstat(name)
	if err != nil {
		return s.errorf("replace", name, err)
	}
	if err := regular(fi); err != nil {
		return s.errorf("replace", name, err)
	}
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:]) // crypto/rand never fails on supported platforms
	tmp := TempPrefix + base + "-" + hex.EncodeToString(rnd[:])
	// The folder itself is opened without following links: the swap happens in it by handle, so
	// a link swapped in for the folder since the Lstat above changes nothing.
	d, err := s.root.OpenFile(dir, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return s.errorf("replace", name, err)
	}
	defer d.Close()
	full := path.Join(dir, tmp)
	if err := s.writeSynced(full, data, perm); err != nil {
		return s.errorf("replace", name, err)
	}
	err = exchange(d, tmp, base)
	if errors.Is(err, ErrNoExchange) {
		err = s.renameIfPresent(full, name)
	}
	// After a swap the temporary name holds the old file; after a failure, the new one.
	_ = s.root.Remove(full)
	if err != nil {
		return s.errorf("replace", name, err)
	}
	return nil
}

// writeSynced creates name (never an existing entry, never through a link) with data, synced.
func (s *Session) writeSynced(name string, data []byte, perm fs.FileMode) error {
	f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NONBLOCK, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // the umask must not narrow or widen what the caller asked
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = s.root.Remove(name)
	}
	return err
}

func (s *Session) renameIfPresent(tmp, name string) error {
	if _, err := s.root.Lstat(name); err != nil {
		return err
	}
	if err := s.root.Rename(tmp, name); err != nil {
		return fmt.Errorf("rename: %w", err)
	}
	return nil
}
