package lane

import (
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coworkbridge/coworkbridge/session"
)

// keptHandle is a folder handle held open between passes: a session folder or a host channel.
// Opening one walks and checks its folders, most of the system calls a pass for one event would
// otherwise cost. Each pass checks with one look that the handle is still on the folder at its
// path (a session folder removed, or made again, is opened anew); the session handle itself
// still checks every step of every name it is given. A handle is released when its session goes,
// or once it has been idle for keptIdle, and a housekeeping pass never keeps one it opened, so
// that the daemon holds folders open only for the sessions at work, never more than maxKept of
// them: an idle session costs no descriptor, however many there are.
type keptHandle struct {
	mu   sync.Mutex
	s    *session.Session
	fi   fs.FileInfo // the folder the handle was opened on
	used time.Time
}

// keptIdle is how long a handle is kept after its last pass.
const keptIdle = time.Minute

// maxKept bounds the handles kept across all sessions (each holds a few descriptors); past it, a
// pass opens its own and closes it.
const maxKept = 256

// get returns the handle on the folder at path, and the function to call when the pass is done
// with it. check is the name, inside the handle, of the folder at path ("" for the handle's own
// folder); open opens a fresh handle, or returns nil; keep says whether one opened now is kept
// for the passes after (a housekeeping pass's is not). count is the collector's count of
// handles kept.
func (k *keptHandle) get(count *atomic.Int32, path, check string, now time.Time, keep bool, open func() *session.Session) (*session.Session, func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.s != nil {
		if fi, err := os.Lstat(path); err == nil && os.SameFile(fi, k.fi) {
			return k.s, func() {}
		}
		k.closeLocked(count)
	}
	s := open()
	if s == nil {
		return nil, func() {}
	}
	if !keep {
		return s, func() { s.Close() }
	}
	fi, err := stat(s, check)
	if err != nil || count.Add(1) > maxKept {
		if err == nil {
			count.Add(-1)
		}
		return s, func() { s.Close() }
	}
	k.s, k.fi, k.used = s, fi, now
	return s, func() {}
}

func stat(s *session.Session, name string) (fs.FileInfo, error) {
	if name == "" {
		return s.Root().Stat(".")
	}
	return s.Lstat(name)
}

// touch notes that the handle served a pass with work to do at now.
func (k *keptHandle) touch(now time.Time) {
	k.mu.Lock()
	k.used = now
	k.mu.Unlock()
}

// releaseIdle closes the handle if it has not been used since now minus keptIdle.
func (k *keptHandle) releaseIdle(count *atomic.Int32, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.s != nil && now.Sub(k.used) > keptIdle {
		k.closeLocked(count)
	}
}

// release closes the handle.
func (k *keptHandle) release(count *atomic.Int32) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closeLocked(count)
}

func (k *keptHandle) closeLocked(count *atomic.Int32) {
	if k.s != nil {
		k.s.Close()
		k.s, k.fi = nil, nil
		count.Add(-1)
	}
}
