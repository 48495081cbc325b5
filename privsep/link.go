package privsep

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/goroutines"
)

// frame is one message on a link. A request carries an id its reply repeats; a note (ID 0)
// wants no reply.
type frame struct {
	ID   uint64          `json:"id,omitempty"`
	Re   bool            `json:"re,omitempty"`
	Kind string          `json:"kind,omitempty"`
	Body json.RawMessage `json:"body,omitempty"`
	Err  string          `json:"err,omitempty"`
}

// writeWait bounds one frame's write: a peer that stops reading for this long is stalled, and
// its link is closed rather than left to hold up the writers behind it.
const writeWait = 5 * time.Second

// handler serves a request (reply true) or a note from the other end. Its result is the
// reply's body.
type handler func(ctx context.Context, kind string, body json.RawMessage) (any, error)

// link is one end of the socket pair between root and a worker: length-prefixed JSON frames,
// requests and replies matched by id, each request served in its own goroutine up to a bound.
type link struct {
	c   net.Conn
	max int // the largest frame read
	wmu sync.Mutex

	next    atomic.Uint64
	mu      sync.Mutex
	pending map[uint64]chan frame
	closed  chan struct{}
	once    sync.Once
	err     error
	// serving bounds the requests from the other end served at once; past it, reading waits,
	// so that a flood from one end stalls its own link and nothing else. Records have slots of
	// their own (bulk): a decision a hook waits for never queues behind a slow write of the
	// decision log, which every user's records share.
	serving, bulk pool
	// notes are served in order, apart from the reading, which a slow note would otherwise hold.
	notes chan frame
	// warm serves requests on goroutines that served one before: a judgement's stack is deep.
	warm *goroutines.Warm
}

// pool bounds the requests of a kind served at once (running) and those let in, running or
// waiting to (admitted): past that, reading waits.
type pool struct{ admitted, running chan struct{} }

func newPool(admitted, running int) pool {
	return pool{admitted: make(chan struct{}, admitted), running: make(chan struct{}, running)}
}

// Bounds of what waits to be served: notes, and records, which wait apart so that a slow write
// does not stop the reading of the next decision.
const (
	noteQueue    = 1024
	recordsQueue = 256
)

func newLink(c net.Conn, maxFrame, concurrent int) *link {
	closed := make(chan struct{})
	return &link{c: c, max: maxFrame, pending: map[uint64]chan frame{}, closed: closed,
		serving: newPool(concurrent, concurrent), bulk: newPool(recordsQueue, concurrent),
		notes: make(chan frame, noteQueue), warm: goroutines.NewWarm(closed, nil)}
}

// poolOf is the pool a request of kind is served from.
func (l *link) poolOf(kind string) pool {
	if kind == kindRecords {
		return l.bulk
	}
	return l.serving
}

// admit lets f in to p's pool and serves it once a slot is free; false: the link closed first.
func (l *link) admit(ctx context.Context, h handler, p pool, f frame) bool {
	select {
	case p.admitted <- struct{}{}:
	case <-l.closed:
		return false
	}
	l.warm.Go(func() {
		defer func() { <-p.admitted }()
		select {
		case p.running <- struct{}{}:
		case <-l.closed:
			return
		}
		defer func() { <-p.running }()
		l.serve(ctx, h, f)
	})
	return true
}

// errClosed: the link is down (the other end exited, or broke the protocol).
var errClosed = errors.New("the link between root and the worker is closed")

func (l *link) close(err error) {
	l.once.Do(func() {
		l.err = err
		close(l.closed)
		l.c.Close()
	})
}

// run reads frames until the link breaks or ctx ends, handing requests and notes to h.
func (l *link) run(ctx context.Context, h handler) error {
	stop := context.AfterFunc(ctx, func() { l.close(ctx.Err()) })
	defer stop()
	notesDone := make(chan struct{})
	go func() {
		defer close(notesDone)
		for f := range l.notes {
			l.serve(ctx, h, f)
		}
	}()
	// What was read is served, in order, before run returns.
	defer func() { close(l.notes); <-notesDone }()
	r := bufio.NewReaderSize(l.c, 64<<10) // a frame's head and body in one read, most often
	var head [4]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			l.close(errClosed)
			return l.reason(err)
		}
		n := binary.BigEndian.Uint32(head[:])
		if int64(n) > int64(l.max) {
			err := fmt.Errorf("a frame of %d bytes is over the link's limit of %d bytes", n, l.max)
			l.close(err)
			return err
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			l.close(errClosed)
			return l.reason(err)
		}
		var f frame
		if err := json.Unmarshal(buf, &f); err != nil {
			err = fmt.Errorf("a frame that is not a message: %w", err)
			l.close(err)
			return err
		}
		if f.Re {
			l.deliver(f)
			continue
		}
		if f.ID == 0 { // a note: counted or logged in order, with no reply to wait for
			select {
			case l.notes <- f:
			case <-l.closed:
				return l.reason(nil)
			}
			continue
		}
		if !l.admit(ctx, h, l.poolOf(f.Kind), f) {
			return l.reason(nil)
		}
	}
}

// reason is why the link ended: its first recorded cause, else err.
func (l *link) reason(err error) error {
	select {
	case <-l.closed:
		if l.err != nil && !errors.Is(l.err, errClosed) {
			return l.err
		}
	default:
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return errClosed
	}
	return err
}

func (l *link) serve(ctx context.Context, h handler, f frame) {
	out, err := h(ctx, f.Kind, f.Body)
	if f.ID == 0 {
		return
	}
	re := frame{ID: f.ID, Re: true}
	if err != nil {
		re.Err = err.Error()
	} else if out != nil {
		data, merr := json.Marshal(out)
		if merr != nil {
			re.Err = merr.Error()
		}
		re.Body = data
	}
	_ = l.write(re) // a link that cannot carry the reply is closed by write
}

func (l *link) deliver(f frame) {
	l.mu.Lock()
	ch := l.pending[f.ID]
	delete(l.pending, f.ID)
	l.mu.Unlock()
	if ch != nil {
		ch <- f // buffered: never blocks
	}
}

func (l *link) write(f frame) error {
	data, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode a %s message: %w", f.Kind, err)
	}
	if len(data) > l.max {
		return fmt.Errorf("a %s message of %d bytes is over the link's limit of %d bytes", f.Kind, len(data), l.max)
	}
	buf := make([]byte, 4+len(data))
	binary.BigEndian.PutUint32(buf, uint32(len(data)))
	copy(buf[4:], data)
	l.wmu.Lock()
	defer l.wmu.Unlock()
	select {
	case <-l.closed:
		return errClosed
	default:
	}
	_ = l.c.SetWriteDeadline(time.Now().Add(writeWait))
	if _, err := l.c.Write(buf); err != nil {
		l.close(fmt.Errorf("the other end stopped reading: %w", err))
		return errClosed
	}
	// A deadline left set is a timer left running: it would wake an idle worker (and root,
	// once for each worker) writeWait after every frame, for nothing.
	_ = l.c.SetWriteDeadline(time.Time{})
	return nil
}

// note sends a message that wants no reply.
func (l *link) note(kind string, body any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode a %s note: %w", kind, err)
	}
	return l.write(frame{Kind: kind, Body: data})
}

// call sends a request and waits for its reply, decoded into out (nil: discarded).
func (l *link) call(ctx context.Context, kind string, in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode a %s request: %w", kind, err)
	}
	id := l.next.Add(1)
	ch := make(chan frame, 1)
	l.mu.Lock()
	l.pending[id] = ch
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.pending, id)
		l.mu.Unlock()
	}()
	if err := l.write(frame{ID: id, Kind: kind, Body: data}); err != nil {
		return err
	}
	select {
	case f := <-ch:
		if f.Err != "" {
			return errors.New(f.Err)
		}
		if out == nil || len(f.Body) == 0 {
			return nil
		}
		if err := json.Unmarshal(f.Body, out); err != nil {
			return fmt.Errorf("decode the reply to a %s request: %w", kind, err)
		}
		return nil
	case <-l.closed:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}
