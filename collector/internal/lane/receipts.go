package lane

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/collector/internal/ledger"
	"github.com/coworkbridge/coworkbridge/transcript"
)

// receiptsMax bounds the receipts taken in one pass; the rest wait for the next.
const receiptsMax = 1000

// socketDoor is where a system-mode daemon hands the lane the receipts of the session's calls it
// judged at its socket (judgement.Socket), in memory rather than as files; the pass takes them
// with the receipts the host hook leaves in the channel. It is reached from outside the pass,
// so it carries its own lock.
type socketDoor struct {
	mu       sync.Mutex
	receipts []claudehook.Receipt
}

// HostJudged takes the receipt of a call judged outside the pass (a system-mode daemon's host
// call), for the next reconciliation to count as guarded. Safe at any time; beyond receiptsMax
// waiting, the oldest is dropped (its call would then be reported unguarded, never hidden).
func (l *Lane) HostJudged(r claudehook.Receipt) { l.socket.judged(r) }

func (d *socketDoor) judged(r claudehook.Receipt) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.receipts) >= receiptsMax {
		d.receipts = d.receipts[1:]
	}
	d.receipts = append(d.receipts, r)
}

// take is the receipts waiting, handed over once.
func (d *socketDoor) take() []claudehook.Receipt {
	d.mu.Lock()
	defer d.mu.Unlock()
	rs := d.receipts
	d.receipts = nil
	return rs
}

// takeReceipt feeds the ledger a call judged outside the lane, and the session's flow what it
// took in and read.
func (l *Lane) takeReceipt(r claudehook.Receipt, now time.Time) {
	l.tier.saw(r.ToolUseID, now)
	if r.Aside {
		return // judged by the session's own hook, whose event the ledger takes
	}
	l.recon.calls.Judged(ledger.Event{ToolUseID: r.ToolUseID, Tool: r.Tool, Denied: r.Denied,
		Fingerprint: transcript.Fingerprint(r.Fingerprint)}, now)
	if !r.Denied {
		l.takeFlow(classifier.Facets{Untrusted: r.Untrusted, Private: r.Private}, r.ToolUseID, r.Tool)
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
