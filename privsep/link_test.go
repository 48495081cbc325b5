package privsep

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pair is two connected ends of a unix socket pair, as root and a worker have.
func pair(t testing.TB) (a, b net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := osFile(fd)
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b = conn(fds[0]), conn(fds[1])
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func echo(_ context.Context, kind string, body json.RawMessage) (any, error) {
	if kind == "fail" {
		return nil, errors.New("refused")
	}
	return json.RawMessage(body), nil
}

func TestALinkMatchesEachReplyToItsRequestUnderConcurrentCalls(t *testing.T) {
	a, b := pair(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	la, lb := newLink(a, 1<<20, 4), newLink(b, 1<<20, 4)
	go la.run(ctx, echo)
	go lb.run(ctx, echo)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			var out int
			if err := la.call(ctx, "echo", i, &out); err != nil || out != i {
				t.Errorf("call %d: got %d, %v", i, out, err)
			}
		})
	}
	wg.Wait()
	if err := la.call(ctx, "fail", 1, nil); err == nil || err.Error() != "refused" {
		t.Errorf("a refused request: %v", err)
	}
}

func TestALinkClosesOnAFrameOverItsLimitWithoutReadingIt(t *testing.T) {
	a, b := pair(t)
	l := newLink(a, 1024, 1)
	done := make(chan error, 1)
	go func() { done <- l.run(context.Background(), echo) }()
	var head [4]byte
	binary.BigEndian.PutUint32(head[:], 200<<20) // 200 MB announced, never sent
	b.Write(head[:])
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "over the link's limit") {
			t.Fatalf("run ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the link waited for a frame over its limit")
	}
	if err := l.call(context.Background(), "echo", 1, nil); !errors.Is(err, errClosed) {
		t.Errorf("a call on the closed link: %v", err)
	}
}

func TestALinkClosesOnAFrameThatIsNotAMessage(t *testing.T) {
	a, b := pair(t)
	l := newLink(a, 1024, 1)
	done := make(chan error, 1)
	go func() { done <- l.run(context.Background(), echo) }()
	var buf bytes.Buffer
	binary.Write(&buf, binary.BigEndian, uint32(5))
	buf.WriteString("hello")
	b.Write(buf.Bytes())
	if err := <-done; err == nil || !strings.Contains(err.Error(), "not a message") {
		t.Fatalf("run ended with %v", err)
	}
}

func TestACallGivesUpWhenTheOtherEndNeverAnswers(t *testing.T) {
	a, _ := pair(t) // nobody reads or answers at the other end
	l := newLink(a, 1<<20, 1)
	go l.run(context.Background(), echo)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.call(ctx, "echo", 1, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call: %v", err)
	}
}

func TestTheLinkEndsWhenTheOtherEndCloses(t *testing.T) {
	a, b := pair(t)
	l := newLink(a, 1<<20, 1)
	done := make(chan error, 1)
	go func() { done <- l.run(context.Background(), echo) }()
	b.Close()
	if err := <-done; !errors.Is(err, errClosed) {
		t.Fatalf("run ended with %v, want the link closed", err)
	}
}

// FuzzLinkFrames feeds root's end of a link whatever a tampered worker may write: it must end
// the link or serve it, never panic or read past its limit.
func FuzzLinkFrames(f *testing.F) {
	frameOf := func(v any) []byte {
		data, _ := json.Marshal(v)
		var b bytes.Buffer
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.Write(data)
		return b.Bytes()
	}
	f.Add(frameOf(frame{ID: 1, Kind: kindDecide, Body: json.RawMessage(`{"Call":{"Door":1}}`)}))
	f.Add(frameOf(frame{Kind: kindHealth, Body: json.RawMessage(`{"op":"count","id":"x","code":"nope","n":-1}`)}))
	f.Add(frameOf(frame{ID: 7, Re: true, Body: json.RawMessage(`1`)}))
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := pair(t)
		w := &worker{s: &Supervisor{Root: nopRoot{}}, user: User{Name: "fuzz"}}
		l := newLink(a, 1<<16, 2)
		done := make(chan error, 1)
		go func() { done <- l.run(context.Background(), w.handle) }()
		b.Write(data)
		b.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the link did not end when the worker's end closed")
		}
	})
}

// A decision never waits behind bookkeeping: with every records slot held by a write that does
// not end, and the notes stuck behind a slow one, a decide request is still read and answered.
func TestADecisionIsAnsweredWhileRecordsAndNotesAreStuck(t *testing.T) {
	a, b := pair(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	defer close(release)
	stuck := func(ctx context.Context, kind string, body json.RawMessage) (any, error) {
		if kind == kindRecords || kind == kindHealth {
			<-release
		}
		return echo(ctx, kind, body)
	}
	const slots = 2
	worker, root := newLink(a, 1<<20, slots), newLink(b, 1<<20, slots)
	go worker.run(ctx, echo)
	go root.run(ctx, stuck)
	for range slots + 2 {
		go worker.call(ctx, kindRecords, records{}, nil)
	}
	for range noteQueue / 2 {
		if err := worker.note(kindHealth, nil); err != nil {
			t.Fatal(err)
		}
	}
	callCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	var out string
	if err := worker.call(callCtx, kindDecide, "ls", &out); err != nil || out != "ls" {
		t.Fatalf("the decision was not answered: %q, %v", out, err)
	}
}

// A worker tells root its figures only when they changed since it last did: each note wakes root,
// and a hundred idle workers' notes every few seconds cost more than their sessions.
func TestAWorkerTellsRootItsStatsOnlyWhenTheyChanged(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	w := &work{link: newLink(a, 1<<16, 2)}
	defer w.link.close(errClosed)
	kinds := make(chan string, 8)
	go func() {
		for {
			var n [4]byte
			if _, err := io.ReadFull(b, n[:]); err != nil {
				return
			}
			data := make([]byte, binary.BigEndian.Uint32(n[:]))
			if _, err := io.ReadFull(b, data); err != nil {
				return
			}
			var f frame
			_ = json.Unmarshal(data, &f)
			kinds <- f.Kind
		}
	}()
	notes := func() int {
		n := 0
		for {
			select {
			case k := <-kinds:
				if k == kindStats {
					n++
				}
			case <-time.After(100 * time.Millisecond):
				return n
			}
		}
	}
	w.stats()
	w.stats()
	if n := notes(); n != 1 {
		t.Fatalf("%d stats notes for the same figures twice, want 1", n)
	}
	w.told.Sessions = 3 // root was told of three sessions; the worker follows none now
	w.stats()
	if n := notes(); n != 1 {
		t.Errorf("%d stats notes for changed figures, want 1", n)
	}
}
