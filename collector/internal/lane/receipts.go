package lane

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/collector/internal/ledger"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/transcript"
)

// receiptsMax bounds the receipts taken in one pass; the rest wait for the next.
const receiptsMax = 1000

// inbox holds the receipts of host calls a system-mode daemon judged itself, handed over in
// memory rather than as files; the pass takes them with the files'.
type inbox struct {
	mu       sync.Mutex
	receipts []claudehook.Receipt
}

// HostJudged takes the receipt of a call judged outside the pass (a system-mode daemon's host
// call), for the next reconciliation to count as guarded. Safe at any time; beyond receiptsMax
// waiting, the oldest is dropped (its call would then be reported unguarded, never hidden).
func (l *Lane) HostJudged(r claudehook.Receipt) {
	l.in.mu.Lock()
	defer l.in.mu.Unlock()
	if len(l.in.receipts) >= receiptsMax {
		l.in.receipts = l.in.receipts[1:]
	}
	l.in.receipts = append(l.in.receipts, r)
}

func (l *Lane) takeInbox(now time.Time) {
	l.in.mu.Lock()
	rs := l.in.receipts
	l.in.receipts = nil
	l.in.mu.Unlock()
	for _, r := range rs {
		l.takeReceipt(r, now)
	}
}

// takeReceipt feeds the ledger a call judged outside the lane, and the session's flow what it
// took in and read.
func (l *Lane) takeReceipt(r claudehook.Receipt, now time.Time) {
	l.recon.calls.Judged(ledger.Event{ToolUseID: r.ToolUseID, Tool: r.Tool, Denied: r.Denied,
		Fingerprint: transcript.Fingerprint(r.Fingerprint)}, now)
	if !r.Denied {
		l.takeFlow(classifier.Facets{Untrusted: r.Untrusted, Private: r.Private}, r.ToolUseID, r.Tool)
	}
}

// takeReceipts feeds the ledger the calls the host hook judged itself in this session (under
// lockdown, every call on the Mac), from the receipts it left in the host channel, and removes
// them: such a call is guarded, not an unguarded call of the transcript. A receipt that is not
// one the host hook writes is removed and counted as planted.
func (l *Lane) takeReceipts(now time.Time) {
	l.takeInbox(now)
	if l.channel == "" {
		return
	}
	dir := filepath.Join(l.channel, filepath.FromSlash(session.ReceiptsDir))
	f, err := os.Open(dir)
	if err != nil {
		return // none yet: the host hook makes the folder with its first receipt
	}
	names, _ := f.Readdirnames(receiptsMax)
	f.Close()
	for _, n := range names {
		p := filepath.Join(dir, n)
		r, err := readReceipt(p)
		os.Remove(p)
		if err != nil {
			l.env.Log.Warn("a host-channel receipt that the host hook did not write was removed", "code", health.CodeForgedEvent, "session", l.id, "file", n, "err", err)
			continue
		}
		l.takeReceipt(r, now)
	}
}

// readReceipt reads a plain file only, never through a link or from a FIFO, and no more than a
// receipt holds.
func readReceipt(path string) (claudehook.Receipt, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return claudehook.Receipt{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return claudehook.Receipt{}, err
	}
	if !fi.Mode().IsRegular() {
		return claudehook.Receipt{}, errors.Join(claudehook.ErrBadReceipt, fs.ErrInvalid)
	}
	data, err := io.ReadAll(io.LimitReader(f, claudehook.MaxReceipt+1))
	if err != nil {
		return claudehook.Receipt{}, err
	}
	return claudehook.ParseReceipt(data)
}
