package hostsocket

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
)

// echo answers every call with the caller's uid and what the request said.
type echo struct {
	mu    sync.Mutex
	peers []Peer
	reqs  []Request
	block chan struct{} // when set, calls wait on it
}

func (e *echo) Serve(ctx context.Context, p Peer, r Request) Answer {
	e.mu.Lock()
	e.peers = append(e.peers, p)
	e.reqs = append(e.reqs, r)
	e.mu.Unlock()
	if e.block != nil {
		<-e.block
	}
	out, _ := json.Marshal(map[string]any{"uid": p.UID, "config_dir": r.ConfigDir})
	return Answer{V: Version, Output: out}
}

func serve(t *testing.T, h Handler) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run", "hook.sock")
	s, err := Listen(path, h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return path
}

func TestTheDaemonKnowsTheCallerByTheKernelNotByTheRequest(t *testing.T) {
	h := &echo{}
	path := serve(t, h)
	a, err := Call(path, Request{Kind: KindCall, Payload: json.RawMessage(`{"tool_name":"Bash"}`), ConfigDir: "/x/.claude"},
		time.Now().Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		UID       uint32 `json:"uid"`
		ConfigDir string `json:"config_dir"`
	}
	if err := json.Unmarshal(a.Output, &got); err != nil || got.UID != uint32(os.Getuid()) || got.ConfigDir != "/x/.claude" {
		t.Fatalf("answer %s (%v); want uid %d from the kernel", a.Output, err, os.Getuid())
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket mode %v (%v), want 0666: every user's hooks connect", fi.Mode(), err)
	}
}

func TestACallerThatSendsNothingDelaysNoOtherCall(t *testing.T) {
	path := serve(t, &echo{})
	var idle []net.Conn
	for range perUser - 1 { // all but one of this user's slots held by connections that say nothing
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	if _, err := Call(path, Request{Kind: KindCall}, time.Now().Add(2*time.Second)); err != nil {
		t.Fatalf("a call behind idle connections failed: %v", err)
	}
}

func TestOneUsersConnectionsAreCappedAndTheExcessIsRefusedAtOnce(t *testing.T) {
	h := &echo{block: make(chan struct{})}
	path := serve(t, h)
	var wg sync.WaitGroup
	for range perUser {
		wg.Go(func() { _, _ = Call(path, Request{Kind: KindCall}, time.Now().Add(10*time.Second)) })
	}
	for {
		h.mu.Lock()
		n := len(h.peers)
		h.mu.Unlock()
		if n == perUser {
			break
		}
		time.Sleep(time.Millisecond)
	}
	_, err := Call(path, Request{Kind: KindCall}, time.Now().Add(10*time.Second))
	close(h.block)
	wg.Wait()
	if err == nil || !strings.Contains(err.Error(), "too many connections") {
		t.Fatalf("the call over the cap got %v, want a refusal", err)
	}
}

func TestARequestOfAnotherVersionOrNotJSONIsAnsweredWithAnError(t *testing.T) {
	path := serve(t, &echo{})
	for name, body := range map[string]string{"version": `{"v":99,"kind":"call"}`, "garbage": "\x00garbage"} {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(body))
		c.(*net.UnixConn).CloseWrite()
		var a Answer
		err = readAnswer(c, &a)
		c.Close()
		if err != nil || a.Error == "" {
			t.Errorf("%s: answer %+v (%v), want an error", name, a, err)
		}
	}
}

func TestListenRefusesAFileOrALinkWhereTheSocketOrItsFolderGoes(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	file := filepath.Join(dir, "hook.sock")
	os.WriteFile(file, []byte("x"), 0o600)
	if _, err := Listen(file, &echo{}, log); err == nil {
		t.Error("Listen replaced a regular file at the socket's name")
	}
	if b, _ := os.ReadFile(file); string(b) != "x" {
		t.Error("the file at the socket's name was changed")
	}
	elsewhere := t.TempDir()
	link := filepath.Join(dir, "run")
	os.Symlink(elsewhere, link)
	if _, err := Listen(filepath.Join(link, "hook.sock"), &echo{}, log); err == nil {
		t.Error("Listen made its socket through a linked folder")
	}
}

func TestACallToNoDaemonFailsBeforeItsDeadline(t *testing.T) {
	_, err := Call(filepath.Join(t.TempDir(), "none.sock"), Request{Kind: KindCall}, time.Now().Add(time.Second))
	if err == nil || !strings.Contains(err.Error(), "reach coworkbridge's daemon") {
		t.Fatalf("got %v", err)
	}
}

// A daemon that takes the call and never answers, or answers a byte at a time, does not keep
// the hook past its deadline: the hook must answer (deny, in enforce) before Claude Code gives
// up on it. The bound checked is generous: this is about ending, not about speed.
func TestADaemonThatStallsOrTricklesDoesNotKeepTheHookPastItsDeadline(t *testing.T) {
	for name, serveConn := range map[string]func(c net.Conn, stop <-chan struct{}){
		"silent": func(c net.Conn, stop <-chan struct{}) {
			io.Copy(io.Discard, c)
			<-stop
		},
		"trickling": func(c net.Conn, stop <-chan struct{}) {
			io.Copy(io.Discard, c)
			for {
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			stop := make(chan struct{})
			defer close(stop)
			path := filepath.Join(t.TempDir(), "hook.sock")
			ln, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					go func() { defer c.Close(); serveConn(c, stop) }()
				}
			}()
			done := make(chan error, 1)
			go func() {
				_, err := Call(path, Request{Kind: KindCall, Payload: json.RawMessage(`{}`)}, time.Now().Add(300*time.Millisecond))
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Error("a call the daemon never answered succeeded")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the call was still waiting long after its deadline")
			}
		})
	}
}

// FuzzRequest feeds the daemon's request reader what any user of the Mac can send.
func FuzzRequest(f *testing.F) {
	f.Add([]byte(`{"v":1,"kind":"call","payload":{"tool_name":"Bash"},"config_dir":"/x"}`))
	f.Add([]byte(`{"v":1,"kind":"status"}`))
	f.Add([]byte(`{"v":1,"payload":"` + strings.Repeat("a", 100) + `"}`))
	f.Add([]byte("\x00{"))
	f.Add([]byte("{\"v\":1,\"kind\":\"call\",\"raw\":true}\n{\n \"tool_name\": \"Bash\"\n}"))
	f.Add([]byte("{\"v\":1,\"kind\":\"call\",\"raw\":true}\n"))
	f.Add([]byte("{\"v\":1,\"kind\":\"call\",\"raw\":true,\"payload\":{}}\nx"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Request
		if decode(data, &d) != nil {
			return
		}
		// What the daemon read, sent again as a hook would, reads the same.
		again, err := encode(d)
		if err != nil {
			return // the daemon never sends a request; a hook's own encoding is tested above
		}
		var e Request
		if err := decode(again, &e); err != nil {
			t.Fatalf("decode(encode(%q)): %v", data, err)
		}
		if d.Raw && !bytes.Equal(e.Payload, d.Payload) {
			t.Fatalf("the raw payload %q came back as %q", d.Payload, e.Payload)
		}
		if e.V != d.V || e.Kind != d.Kind || e.ConfigDir != d.ConfigDir || e.HostSession != d.HostSession {
			t.Fatalf("%+v came back as %+v", d, e)
		}
	})
}

// A call's head, written out by the hook, reads back as json.Marshal's would, whatever its
// strings hold (quotes, backslashes, control characters, bytes that are not UTF-8).
func FuzzCallHead(f *testing.F) {
	f.Add("/Users/alex/Library/Application Support/Claude/local-agent-mode-sessions/a/o/local_1/.claude", "sess-1")
	f.Add("a\"b\\c\x00\x1f\x7f\u2028<>&", "\xff\xfe\xc3")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, configDir, hostSession string) {
		req := Request{V: Version, Kind: KindCall, ConfigDir: configDir, HostSession: hostSession}
		ours, err := encode(req)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		var a, b Request
		if err := json.Unmarshal(ours, &a); err != nil {
			t.Fatalf("%q: %v", ours, err)
		}
		if err := json.Unmarshal(theirs, &b); err != nil {
			t.Fatal(err)
		}
		if a.V != b.V || a.Kind != b.Kind || a.ConfigDir != b.ConfigDir || a.HostSession != b.HostSession || a.Raw != b.Raw || a.Payload != nil {
			t.Fatalf("written out %q reads %+v; json.Marshal's %q reads %+v", ours, a, theirs, b)
		}
	})
}

// The answer most calls get reads without a decoder, and as a decoder reads it; any other
// answer is decoded.
func TestTheUsualAnswerReadsAsADecoderReadsIt(t *testing.T) {
	for _, a := range []Answer{{V: Version}, {V: Version, Output: json.RawMessage(`{"hookSpecificOutput":{}}`)}, {V: Version, Off: true}, {V: Version, Error: "x"}} {
		data, _ := json.Marshal(a)
		var got Answer
		if err := readAnswer(bytes.NewReader(data), &got); err != nil || got.V != a.V || got.Off != a.Off || got.Error != a.Error || !bytes.Equal(got.Output, a.Output) {
			t.Errorf("%s read as %+v (%v)", data, got, err)
		}
	}
	if string(must(json.Marshal(Answer{V: Version}))) != noObjection {
		t.Errorf("the daemon's answer for no objection is %s, not %s: the hook would decode every answer", must(json.Marshal(Answer{V: Version})), noObjection)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A hook sends its payload after the request's other members, as it read it: the daemon gets
// the same request as one sent whole, newlines in the payload and all. A request of one object
// (a hook of the release before) is read as before; a head that disagrees with what follows it
// is refused.
func TestARequestsPayloadSentRawArrivesAsItWasRead(t *testing.T) {
	e := &echo{}
	path := serve(t, e)
	payload := []byte("{\n  \"tool_name\": \"Bash\",\n  \"tool_input\": {\"command\": \"echo 'a\\nb'\"}\n}\n")
	if _, err := Call(path, Request{Kind: KindCall, Payload: payload, ConfigDir: "/c", HostSession: "h"}, time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	got := e.reqs[0]
	e.mu.Unlock()
	if !bytes.Equal(got.Payload, payload) || got.ConfigDir != "/c" || got.HostSession != "h" || got.Kind != KindCall {
		t.Errorf("the daemon read %+v (payload %q)", got, got.Payload)
	}

	for _, tc := range []struct {
		name, wire string
		ok         bool
		payload    string
	}{
		{"one object", `{"v":1,"kind":"call","payload":{"tool_name":"Bash"}}`, true, `{"tool_name":"Bash"}`},
		{"raw", "{\"v\":1,\"kind\":\"call\",\"raw\":true}\n{\"tool_name\":\"Bash\"}", true, `{"tool_name":"Bash"}`},
		{"raw and empty", "{\"v\":1,\"kind\":\"call\",\"raw\":true}\n", true, ``},
		{"raw with nothing after", `{"v":1,"kind":"call","raw":true}`, false, ""},
		{"more after one object", "{\"v\":1,\"kind\":\"call\"}\n{\"tool_name\":\"Bash\"}", false, ""},
	} {
		var r Request
		err := decode([]byte(tc.wire), &r)
		if (err == nil) != tc.ok || tc.ok && string(r.Payload) != tc.payload {
			t.Errorf("%s: %+v (payload %q), %v", tc.name, r, r.Payload, err)
		}
	}
}

// A hook that finds the socket can connect: the socket appears at its name only once it listens
// (it is made under another name and renamed), and it is gone once the server stops. A previous
// daemon's socket is replaced.
func TestTheSocketIsThereOnlyWhileItListens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "hook.sock")
	old, err := Listen(path, &echo{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	old.ln.Close() // a daemon that died: its socket file stays
	s, err := Listen(path, &echo{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("a previous daemon's socket was not replaced: %v", err)
	}
	names, _ := os.ReadDir(filepath.Dir(path))
	if len(names) != 1 || names[0].Name() != "hook.sock" {
		t.Fatalf("the socket folder holds %v", names)
	}
	c, err := net.Dial("unix", path) // before Run: the backlog takes it
	if err != nil {
		t.Fatalf("the socket at its name does not take a connection: %v", err)
	}
	c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the socket outlived its server: %v", err)
	}
}

// Users runs at every rescan: a user's socket that cannot be made is logged once, not at each,
// and its making later is logged too.
func TestAUsersSocketThatCannotBeMadeIsLoggedOnceAndItsRecovery(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a socket to another user needs root")
	}
	path := filepath.Join(t.TempDir(), "run", "hook.sock")
	var logs bytes.Buffer
	s, err := Listen(path, &echo{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.ln.Close()
	users := filepath.Join(filepath.Dir(path), "users")
	if err := os.WriteFile(users, nil, 0o600); err != nil { // a file where the folder goes
		t.Fatal(err)
	}
	for range 3 {
		s.Users([]uint32{4242})
	}
	if n := strings.Count(logs.String(), "cannot make a user's own socket"); n != 1 {
		t.Errorf("logged %d times for three passes:\n%s", n, logs.String())
	}
	os.Remove(users)
	s.Users([]uint32{4242})
	if !strings.Contains(logs.String(), "made at last") {
		t.Errorf("the recovery was not logged:\n%s", logs.String())
	}
	if _, err := os.Stat(UserPath(path, 4242)); err != nil {
		t.Errorf("the user's socket was not made: %v", err)
	}
	s.Users(nil)
}

// BenchmarkDecodeRequest is the daemon's reading of one call's request, its payload a Write of
// 4 KiB (the CLI's real shape): raw after the head (decode), against the request of one object
// the release before sent (one more parse of the payload, as a member).
func BenchmarkDecodeRequest(b *testing.B) {
	input, _ := json.Marshal(map[string]any{"file_path": "/Users/ada/outputs/notes.md", "content": strings.Repeat("Some prose the model wrote, with \"quotes\" and\nnewlines.\n", 72)})
	payload := []byte(`{"session_id":"8d5e0c1a-4f0e-4f9a-9a51-3c2b9e1d7f10","transcript_path":"/Users/ada/.claude/projects/p/8d5e.jsonl","cwd":"/Users/ada/outputs","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":` + string(input) + `,"tool_use_id":"toolu_01ABC"}`)
	req := Request{V: Version, Kind: KindCall, Payload: payload, ConfigDir: "/Users/ada/.claude", HostSession: "s"}
	raw, err := encode(req)
	if err != nil {
		b.Fatal(err)
	}
	whole, err := json.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		wire []byte
	}{{"raw", raw}, {"one-object", whole}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.wire)))
			for b.Loop() {
				var r Request
				if err := decode(tc.wire, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A hook whose payload is larger than the daemon takes gets the daemon's answer to it, read
// after the daemon stopped reading (the hook's write fails on a closed socket: an error, never
// a signal that ends the hook), or an error: never a hang, never a crash.
func TestACallLargerThanTheDaemonTakesEndsWithItsAnswerOrAnError(t *testing.T) {
	e := &echo{}
	path := serve(t, e)
	huge := json.RawMessage(`{"tool_name":"Write","tool_input":{"content":"` + strings.Repeat("x", MaxRequest) + `"}}`)
	a, err := Call(path, Request{Kind: KindCall, Payload: huge}, time.Now().Add(20*time.Second))
	if err == nil && len(a.Output) == 0 {
		t.Errorf("the daemon's answer was lost: %+v", a)
	}
	// The daemon may reset the connection (it left data unread) before its handler has run:
	// the hook then ends with an error, and the handler still sees the call, as oversized.
	oversized := func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.reqs) == 1 && e.reqs[0].Oversized > 0
	}
	cbtest.WaitForf(t, oversized, func() string { return "the daemon was never handed the oversized call: the test shows nothing" })
}
