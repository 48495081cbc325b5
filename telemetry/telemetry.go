// Package telemetry writes the decision log: one JSON object per line for every tool call
// coworkbridge judged, with secrets redacted and long values truncated before anything reaches
// disk. The log rotates by size and is safe to append from several goroutines and from separate
// processes (the daemon and the `hook` subcommand) at once.
//
// It opens nothing at the log's names that it did not make (see own.go): the log's folder may be
// writable by the agent's identity (per-user mode). A write never waits on another process's lock
// past a deadline; records a hook could not write go to a drop folder the daemon imports (drop.go).
//
// It does not decide anything and reads no session files; a failed write is returned and counted,
// never fatal, so the pipeline that calls it never stalls on it.
package telemetry

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// MaxStringBytes is where each string of a tool input is cut.
const MaxStringBytes = 4 << 10

// Record is one line of the decision log.
type Record struct {
	// Prev links the record to the line before it (see LineHash); the log fills it, whatever the
	// writer set.
	Prev string `json:"prev,omitempty"`
	// Schema is the record format's version (SchemaVersion); record.schema.json describes it.
	Schema    int             `json:"schema"`
	TS        time.Time       `json:"ts"`
	RID       string          `json:"rid"`
	Session   string          `json:"session"`
	Agent     string          `json:"agent"`
	Transport string          `json:"transport"`
	Mode      string          `json:"mode"`
	Enforced  bool            `json:"enforced"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	// Cwd is the call's working folder as the agent saw it, so that a replay judges its paths
	// as they were judged.
	Cwd      string              `json:"cwd,omitempty"`
	Decision claudehook.Decision `json:"decision"`
	Rule     string              `json:"rule,omitempty"`
	Reason   string              `json:"reason,omitempty"`
	// Matched, Nudge and Effects explain a deny or an ask as check does: the part of the input
	// the rule matched, what the agent was told to do instead, and the effects seen in a shell
	// command. Allows carry none of them.
	Matched   string   `json:"matched,omitempty"`
	Nudge     string   `json:"nudge,omitempty"`
	Effects   []string `json:"effects,omitempty"`
	LatencyUS int64    `json:"latency_us"`
	// Where the record comes from, so that logs from a fleet can be told apart: filled from the
	// log's Stamp when the writer leaves them empty.
	Host         string `json:"host,omitempty"`
	User         string `json:"user,omitempty"`
	Version      string `json:"version,omitempty"`
	ConfigHash   string `json:"config_hash,omitempty"`
	ConfigOrigin string `json:"config_origin,omitempty"`
	// InputOmitted says why Input is not the call's input: "metadata" or "none" (telemetry.inputs).
	InputOmitted string `json:"input_omitted,omitempty"`
	// What joins the record to Claude Code's own telemetry for the same call: the call's
	// tool_use_id, the CLI's session id (session.id there; Session is Cowork's), the prompt it
	// answers (prompt.id) and the CLI's version (app.version), each when known.
	ToolUseID    string `json:"tool_use_id,omitempty"`
	CLISessionID string `json:"cli_session_id,omitempty"`
	PromptID     string `json:"prompt_id,omitempty"`
	CLIVersion   string `json:"cli_version,omitempty"`
	// Flow names, for a call a flow rule matched, the calls of the flow: the untrusted content
	// the session took in, the private data it read, and this call's send.
	Flow []string `json:"flow,omitempty"`
}

// SchemaVersion is the version of the record format. 2 added schema, host, user, version,
// config_hash, config_origin, cwd and input_omitted; 3 added prev, the hash chain; 4 added
// matched, nudge and effects; 5 added tool_use_id, cli_session_id, prompt_id and cli_version; 6
// added flow.
const SchemaVersion = 6

// Stamp is what every record says about where it comes from.
type Stamp struct {
	Host, User, Version, ConfigHash, ConfigOrigin string
}

// LocalStamp is the stamp of records written on this machine by this process's user, under the
// configuration with the given hash and origin.
func LocalStamp(version, configHash, configOrigin string) Stamp {
	host, _ := os.Hostname()
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return Stamp{Host: host, User: name, Version: version, ConfigHash: configHash, ConfigOrigin: configOrigin}
}

// What is logged of a call's input when nothing objected to it (deny and ask records always
// keep theirs, redacted).
const (
	InputsAll      = "all"      // the input, redacted
	InputsMetadata = "metadata" // its shape only: the keys of the object and its size
	InputsNone     = "none"     // nothing
)

// Transports.
const (
	TransportSpool = "vm-spool"
	TransportHook  = "host-hook"
	// TransportChannel: a Cowork hook running on the Mac handed the event over through the
	// session's host channel, out of the agent's reach.
	TransportChannel = "host-channel"
	// TransportSocket: a host hook handed the call to a system-mode daemon over its socket; the
	// record's user is the kernel's word.
	TransportSocket = "host-socket"
	// TransportTranscript: found by reading the CLI's transcript, not reported by any hook.
	TransportTranscript = "transcript"
	// TransportLog: found in the decision log itself (a record cut or edited).
	TransportLog = "decision-log"
)

// Options configure a Log.
type Options struct {
	Path         string
	MaxFileBytes int64
	// MaxFiles counts the live file and the rotated ones (path.1 ... path.N-1).
	MaxFiles int
	Redact   bool
	// Inputs is InputsAll (the default when empty), InputsMetadata or InputsNone.
	Inputs string
	// Stamp is written into every record; SetStamp changes it when the configuration does.
	Stamp Stamp
	// GroupRead lets the group ReadGID read the log's files (0640, that group's; the folder is
	// the daemon's to open): system mode's admin group. Otherwise the files are 0600.
	GroupRead bool
	ReadGID   int
	// LockWait bounds the wait for the inter-process lock (DefaultLockWait when zero): a writer
	// that cannot have it in time fails with ErrLockHeld, and its records are retried or dropped
	// off (see Drop), never waited for by an answer.
	LockWait time.Duration
	// OnBreak, when set, is told what was done to the log behind this writer's back: the line it
	// wrote last was cut, changed, or its file removed (see Check). It is called with no lock
	// held, so it may write to the log.
	OnBreak func(problem string)
	// RetainMinAge is how long a record of the retained log is kept at the least: its oldest file
	// is not dropped while it holds a younger one (up to four times MaxFiles files). Zero: the
	// retained log rotates by size alone.
	RetainMinAge time.Duration
	// Mode is the configuration's mode, carried by the records the log writes of itself (what
	// a rotation evicted); "observe" when empty.
	Mode string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// NoRotate is for a writer of one record per process (a hook): a write that would rotate the
	// log fails with ErrRotationDue instead, for the caller to leave the record to the daemon,
	// which rotates. A rotation reads what each session holds of the log, which a process per
	// tool call must not pay for.
	NoRotate bool
}

// ErrRotationDue: the write would rotate the log, and this writer does not (Options.NoRotate).
var ErrRotationDue = errors.New("the decision log is due to rotate, which this writer leaves to the daemon")

// Log is the decision log. Its methods are safe for concurrent use.
type Log struct {
	opts     Options
	lock     *fileLock // taken for every write, so that each record links to the line truly before
	mu       sync.Mutex
	f        *os.File
	fi       os.FileInfo
	failures atomic.Uint64
	// torn: a write failed, and may have left part of a line at the end of the file.
	torn  bool
	stamp atomic.Pointer[Stamp]
	// mark is where this log's last write (or Check) left the chain; broken, what checkMark found.
	mark   mark
	broken string
	buf    []byte // see scratch
	closed bool   // Check on a closed log (a heartbeat racing a config change) opens nothing
	shares shareCache
}

func (l *Log) now() time.Time {
	if l.opts.Now != nil {
		return l.opts.Now()
	}
	return time.Now()
}

// Open returns a Log; the file is opened on the first write, so a log folder that is missing or
// read-only now is retried later rather than failing the daemon's start.
func Open(o Options) *Log {
	if o.MaxFiles < 1 {
		o.MaxFiles = 1
	}
	if o.LockWait <= 0 {
		o.LockWait = DefaultLockWait
	}
	l := &Log{opts: o, lock: &fileLock{path: o.Path + ".lock"}}
	l.stamp.Store(&o.Stamp)
	return l
}

// SetStamp changes what later records say about where they come from: a new configuration's
// hash and origin.
func (l *Log) SetStamp(s Stamp) { l.stamp.Store(&s) }

// Failures counts writes that failed.
func (l *Log) Failures() uint64 { return l.failures.Load() }

// Write appends one record with a single write(2). It returns the error, counted, when the
// record could not be written.
func (l *Log) Write(r Record) error {
	line, err := l.Encode(r)
	if err == nil {
		err = l.append(line)
	}
	if err != nil {
		l.failures.Add(1)
		return fmt.Errorf("decision log %s: %w", l.opts.Path, err)
	}
	return nil
}

// WriteBatch appends records with a single write(2), so that a batch is in the log entirely or,
// after a crash, as a prefix of whole lines. On error nothing of the batch is reported written.
func (l *Log) WriteBatch(rs []Record) error {
	if len(rs) == 0 {
		return nil
	}
	lines := make([][]byte, 0, len(rs))
	for _, r := range rs {
		line, err := l.Encode(r)
		if err != nil {
			l.failures.Add(1)
			return fmt.Errorf("decision log %s: encode record %s: %w", l.opts.Path, r.RID, err)
		}
		lines = append(lines, line)
	}
	if err := l.append(lines...); err != nil {
		l.failures.Add(1)
		return fmt.Errorf("decision log %s: %w", l.opts.Path, err)
	}
	return nil
}

// Encode renders a record as its log line, redacted and truncated, ending in a newline.
func (l *Log) Encode(r Record) ([]byte, error) {
	r.Schema, r.Prev = SchemaVersion, ""
	r.TS = r.TS.UTC()
	st := l.stamp.Load()
	r.Host = cmp.Or(r.Host, st.Host)
	r.User = cmp.Or(r.User, st.User)
	r.Version = cmp.Or(r.Version, st.Version)
	r.ConfigHash = cmp.Or(r.ConfigHash, st.ConfigHash)
	r.ConfigOrigin = cmp.Or(r.ConfigOrigin, st.ConfigOrigin)
	r.Input = sanitizeInput(r.Input, l.opts.Redact)
	if r.Decision == claudehook.Allow && r.InputOmitted == "" {
		switch l.opts.Inputs {
		case InputsMetadata:
			r.Input, r.InputOmitted = inputShape(r.Input), InputsMetadata
		case InputsNone:
			r.Input, r.InputOmitted = json.RawMessage("null"), InputsNone
		}
	}
	if l.opts.Redact {
		// Every string the agent can choose is redacted: an MCP server names its tools and the
		// agent its working folder, and either can carry a token.
		r.Tool, r.Cwd, r.Session, r.Agent = RedactName(r.Tool), RedactName(r.Cwd), RedactName(r.Session), RedactName(r.Agent)
		r.Reason, r.Matched, r.Nudge = Redact(r.Reason), Redact(r.Matched), Redact(r.Nudge)
		r.Effects, r.Flow = redactAll(r.Effects), redactAll(r.Flow)
	}
	b, err := appendRecord(make([]byte, 0, 512+len(r.Input)), &r)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// append chains lines (encoded records, without their link) after the log's head and writes them
// with one write(2), under the inter-process lock: the link must be to the line truly before.
func (l *Log) append(lines ...[]byte) error {
	err := l.appendLocked(lines)
	l.report()
	return err
}

func (l *Log) appendLocked(lines [][]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.takeLock(); err != nil {
		return err
	}
	defer l.lock.Unlock()
	if err := l.current(); err != nil {
		return err
	}
	size := int64(0)
	for _, line := range lines {
		size += int64(len(line) + len(prevPrefix) + 2*hashLen + 2)
	}
	if l.opts.MaxFileBytes > 0 && l.fi.Size() > 0 && l.fi.Size()+size > l.opts.MaxFileBytes {
		if l.opts.NoRotate {
			return ErrRotationDue
		}
		notices, err := l.rotate()
		if err != nil {
			return err
		}
		lines = append(notices, lines...)
	}
	if l.torn {
		if err := l.mend(); err != nil {
			return err
		}
	}
	known := l.checkMark()
	if known == "" {
		if err := l.endOpenLine(); err != nil {
			return err
		}
	}
	prev, err := l.head(known)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, size)
	last := 0
	for _, line := range lines {
		linked := withPrev(line, prev)
		prev = LineHash(linked)
		last = len(buf)
		buf = append(buf, linked...)
	}
	n, err := l.f.Write(buf)
	if err == nil && n != len(buf) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(buf))
	}
	if err != nil {
		l.torn = true // mended before the next write, whatever the outcome of this one
		return err
	}
	at := l.fi.Size()
	l.mark = mark{fi: l.fi, start: at + int64(last), end: at + int64(n), head: prev}
	return nil
}

// takeLock takes the inter-process lock, making the log's folder first: the lock file is in it.
func (l *Log) takeLock() error {
	if l.lock.f == nil { // the folder is checked when the lock file is opened, not at every write
		refused, err := ownFolder(filepath.Dir(l.opts.Path))
		l.noteBreak(refused)
		if err != nil {
			return err
		}
	}
	if err := l.lock.Lock(l.opts.LockWait); err != nil {
		return fmt.Errorf("lock the log: %w", err)
	}
	return nil
}

// head is the hash of the line the next record follows: the live file's last, or for an empty
// live file the last of the file it was rotated from. known is that hash when checkMark just
// read it, and found the marked line at the end of l.fi, which current had just taken: nothing
// was written since, so l.fi needs no second look (a system call per record).
func (l *Log) head(known string) (string, error) {
	if known != "" {
		return known, nil
	}
	fi, err := l.f.Stat()
	if err != nil {
		return "", fmt.Errorf("stat the log: %w", err)
	}
	l.fi = fi
	if fi.Size() > 0 {
		return tailHash(l.f, fi.Size(), l.scratch())
	}
	h, err := fileHead(l.opts.Path + ".1")
	if err != nil {
		return "", fmt.Errorf("read the head of the rotated log: %w", err)
	}
	return h, nil
}

// endOpenLine ends with a newline a file whose last line is open: what another writer's failed
// write, or an edit, left. Appended to, the line would swallow the record and hide it from every
// line reader; ended, it stays for Verify to report as the foreign line it is.
func (l *Log) endOpenLine() error {
	fi, err := l.f.Stat() // a mend may have cut the file since l.fi
	if err != nil {
		return fmt.Errorf("stat the log: %w", err)
	}
	size := fi.Size()
	if size == 0 {
		return nil
	}
	b := l.scratch()[:1]
	if _, err := l.f.ReadAt(b, size-1); err != nil {
		return fmt.Errorf("read the end of the log: %w", err)
	}
	if b[0] == '\n' {
		return nil
	}
	if _, err := l.f.Write([]byte("\n")); err != nil {
		return fmt.Errorf("end an open line in the log: %w", err)
	}
	return nil
}

// mendWindow bounds how far back mend looks for the last complete line.
const mendWindow = 64 << 20

// mend makes the file end on a complete line again after a failed write: a disk that filled up
// mid-write leaves part of a line, and the next record appended after it would be glued to it and
// lost to every line reader. It cuts back to just after the last newline; the caller holds the
// inter-process lock, so that another process writing or rotating does not race it.
func (l *Log) mend() error {
	fi, err := l.f.Stat()
	if err != nil {
		return err
	}
	end, err := lastLineEnd(l.f, fi.Size())
	if err != nil {
		return fmt.Errorf("find the last complete line: %w", err)
	}
	if end < 0 {
		// No newline anywhere near the end: end the fragment with one rather than cut blindly.
		if _, err := l.f.Write([]byte("\n")); err != nil {
			return fmt.Errorf("end a torn line in the log: %w", err)
		}
	} else if end < fi.Size() {
		if err := l.f.Truncate(end); err != nil {
			return fmt.Errorf("cut a torn line from the end of the log: %w", err)
		}
	}
	l.torn = false
	return nil
}

// lastLineEnd returns the offset just past the last newline in the file: 0 when the whole file
// holds none, -1 when its last mendWindow bytes hold none.
func lastLineEnd(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	end := size
	for end > 0 {
		if size-end >= mendWindow {
			return -1, nil
		}
		start := max(0, end-int64(len(buf)))
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && n < int(end-start) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// current makes l.f the file now at the path, reopening when another process rotated it, and
// refreshes l.fi with its size. Anything at the log's name that the log did not make (a link, a
// pipe, a hard link, another user's file) is set aside, never written through, and a new file
// starts; l.broken says so, for record_tampered.
func (l *Log) current() error {
	fi, err := os.Lstat(l.opts.Path)
	if l.f != nil && err == nil && os.SameFile(fi, l.fi) {
		l.fi = fi
		return nil
	}
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	refusedDir, err := ownFolder(filepath.Dir(l.opts.Path))
	l.noteBreak(refusedDir)
	if err != nil {
		return err
	}
	// Read access too: the chain's head and a torn line are found by reading the end back.
	f, fi, refused, err := openOrCreateOwn(l.opts.Path, os.O_RDWR|os.O_APPEND)
	l.noteBreak(refused)
	if err != nil {
		return err
	}
	if err := l.readers().fit(f, fi); err != nil {
		f.Close()
		return err
	}
	l.f, l.fi = f, fi
	return nil
}

func (l *Log) readers() readers {
	if !l.opts.GroupRead {
		return readers{gid: -1}
	}
	return readers{gid: l.opts.ReadGID}
}

// noteBreak adds what was set aside to what the next report tells OnBreak.
func (l *Log) noteBreak(what string) {
	switch {
	case what == "":
	case l.broken == "":
		l.broken = what
	default:
		l.broken += "; " + what
	}
}

// rotate shifts path -> path.1 -> path.2 ... (the caller holds the inter-process lock, so another
// process cannot have rotated in between), then opens a fresh file. The records of the oldest
// file that are kept apart (see Retained) move to the retained log before it is dropped.
func (l *Log) rotate() (notices [][]byte, err error) {
	p := l.opts.Path
	last := l.opts.MaxFiles - 1
	drop := p
	if last >= 1 {
		drop = p + "." + strconv.Itoa(last)
	}
	evicted, lostYoung, err := l.retain(drop)
	if err != nil {
		return nil, fmt.Errorf("rotate: keep the notable records of %s: %w", drop, err)
	}
	if last < 1 {
		err = os.Remove(p)
	} else {
		_ = os.Remove(drop)
		for i := last - 1; i >= 1; i-- {
			_ = os.Rename(p+"."+strconv.Itoa(i), p+"."+strconv.Itoa(i+1))
		}
		err = os.Rename(p, p+".1")
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("rotate: %w", err)
	}
	l.f.Close()
	l.f = nil
	if err := l.current(); err != nil {
		return nil, err
	}
	return l.evictionNotices(evicted, lostYoung), nil
}

// Sync flushes what has been written to stable storage, so that spool offsets committed after it
// never cover records a power loss could take back.
// Writers are not held up meanwhile: the flush runs outside the lock.
func (l *Log) Sync() error {
	l.mu.Lock()
	f := l.f
	l.mu.Unlock()
	if f == nil {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("decision log %s: sync: %w", l.opts.Path, err)
	}
	return nil
}

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.lock.Close()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// sanitizeInput redacts and truncates every string in a tool input. Input that is not JSON is
// kept as one (redacted, truncated) string, so that nothing unredacted slips through.
// inputShape is what InputsMetadata keeps of an input: its keys, when it is an object, and its
// size.
func inputShape(raw json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	shape := struct {
		Keys  []string `json:"keys,omitempty"`
		Bytes int      `json:"bytes"`
	}{Bytes: len(raw)}
	if json.Unmarshal(raw, &obj) == nil {
		shape.Keys = slices.Sorted(maps.Keys(obj))
	}
	out, err := json.Marshal(shape)
	if err != nil {
		return json.RawMessage("null")
	}
	return out
}

// RedactedInput is a tool call's input as the decision log writes it with redaction: every
// secret the log would hide is hidden. For what the daemon keeps of an input anywhere else (its
// state, previews of calls awaiting their result), so that nothing persisted holds more than
// the log.
func RedactedInput(raw json.RawMessage) json.RawMessage { return sanitizeInput(raw, true) }

func sanitizeInput(raw json.RawMessage, redact bool) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		v = string(raw)
	}
	b, err := appendValue(make([]byte, 0, len(raw)), sanitize(v, redact, false))
	if err != nil {
		return json.RawMessage(`"[unencodable input]"`)
	}
	return b
}

func sanitize(v any, redact, secret bool) any {
	switch x := v.(type) {
	case string:
		if redact && secret && x != "" {
			return "[REDACTED:secret-field]"
		}
		if redact {
			x = Redact(x)
		}
		return truncate(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			v := sanitize(e, redact, isSecretField(k))
			if redact {
				k = Redact(k)
			}
			k = truncate(k)
			for _, taken := out[k]; taken; _, taken = out[k] {
				// Two keys that redact alike both stay, the later one marked.
				k += "'"
			}
			out[k] = v
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = sanitize(e, redact, secret)
		}
		return x
	default:
		return v
	}
}

// truncate cuts s at MaxStringBytes on a character boundary and says how much was cut.
func truncate(s string) string {
	if len(s) <= MaxStringBytes {
		return s
	}
	cut := MaxStringBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…[truncated %d bytes]", len(s)-cut)
}

func redactAll(ss []string) []string {
	if len(ss) == 0 {
		return ss
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Redact(s)
	}
	return out
}
