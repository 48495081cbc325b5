package managedconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/google/renameio/v2"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

// Origin says where the effective configuration came from.
type Origin string

const (
	// OriginNone: no managed.json exists, so coworkbridge is off. This is not an error.
	OriginNone Origin = "none"
	// OriginFile: the configuration is the managed.json on disk.
	OriginFile Origin = "file"
	// OriginLastGood: managed.json is invalid; the daemon runs on the last valid copy.
	OriginLastGood Origin = "last-good"
	// OriginInvalid: managed.json is invalid and no valid copy was ever seen, so coworkbridge is
	// off. The daemon must say so loudly: an admin meant it to be on.
	OriginInvalid Origin = "invalid"
)

// Snapshot is the outcome of one look at the configuration: the effective Config and how it was
// arrived at. A Snapshot is never an error by itself; Problem says what was wrong.
type Snapshot struct {
	// Config is effective; when coworkbridge is off it holds the defaults.
	Config Config
	Origin Origin
	// Path is the managed.json consulted, "" when none exists.
	Path string
	// Hash is the SHA-256 of the bytes Config was parsed from, "" when off.
	Hash string
	// Problem says why the file at Path is not in force (OriginLastGood, OriginInvalid).
	Problem error
	// SaveErr reports a failure to keep the last-good copy; the config itself is still in force.
	SaveErr error
	// Intent, for OriginInvalid, is the mode the broken file clearly asks for (IntentOf), so that
	// a broken enforce file fails closed while a broken observe file blocks nothing.
	Intent Mode
	// Unread, for OriginInvalid: the file could not be read at all (and no good copy could be),
	// so nothing is known of what the admin asks; Intent is then only a guess.
	Unread bool
}

// Enabled reports whether the daemon should guard Cowork sessions.
func (s Snapshot) Enabled() bool {
	return (s.Origin == OriginFile || s.Origin == OriginLastGood) && s.Config.CoworkEnabled
}

// ShortHash is the first 12 hex digits of Hash, for logs.
func (s Snapshot) ShortHash() string {
	if len(s.Hash) < 12 {
		return s.Hash
	}
	return s.Hash[:12]
}

// Same reports whether two snapshots describe the same state, so a watcher delivers only changes.
func (s Snapshot) Same(o Snapshot) bool {
	return s.Origin == o.Origin && s.Path == o.Path && s.Hash == o.Hash && s.ProblemText() == o.ProblemText()
}

// ProblemText is why the file is not in force as written, "" when it is.
func (s Snapshot) ProblemText() string {
	if s.Problem == nil {
		return ""
	}
	return s.Problem.Error()
}

// Loader reads the configuration from its place on this machine.
type Loader struct {
	env   Env
	paths Paths
	// keep: this loader is the daemon's, the one writer of the last-good copy.
	keep bool
}

// NewLoader returns a Loader that only reads: the configuration, and when it is invalid the
// last-good copy in paths.StateDir. Commands other than the daemon use it, so that trying a
// candidate file can never replace the copy a running deployment falls back on.
func NewLoader(env Env, paths Paths) *Loader {
	return &Loader{env: env, paths: paths}
}

// Candidates lists the places Load looks for the configuration, in order (Env.ConfigCandidates).
func (l *Loader) Candidates() []string { return l.env.ConfigCandidates() }

// NewDaemonLoader returns the daemon's Loader, which also keeps the last-good copy current.
func NewDaemonLoader(env Env, paths Paths) *Loader {
	return &Loader{env: env, paths: paths, keep: true}
}

// Load looks at the configuration once. It never fails: every outcome, including an unreadable or
// invalid file, is a Snapshot.
func (l *Loader) Load() Snapshot {
	path, err := l.env.ExistingConfig()
	if path == "" && err == nil {
		return l.off(path)
	}
	var data []byte
	if err == nil {
		data, err = ReadSource(path)
	}
	read := err == nil
	if read {
		var cfg Config
		if cfg, err = Parse(data, path, l.env, l.paths); err == nil {
			snap := Snapshot{Config: cfg, Origin: OriginFile, Path: path, Hash: hash(data)}
			if l.keep {
				snap.SaveErr = l.saveLastGood(data)
			}
			return snap
		}
	}
	// Only now is the fallback built: the hook loads the configuration on every tool call, and
	// a file that parses needs neither the defaults nor a guess at what a broken one meant.
	off := l.off(path)
	if read {
		off.Intent = IntentOf(data)
	} else {
		off.Unread = true
	}
	if errors.Is(err, errNotRegular) {
		// No MDM delivers a FIFO, a socket or a folder: one planted at the name must not
		// switch enforcement off, so with no good copy every call is denied.
		off.Intent = Enforce
	}
	return l.fallBack(off, err)
}

// off is the snapshot of no configuration at path: the defaults as this process sees them
// (development overrides included).
func (l *Loader) off(path string) Snapshot {
	off := Snapshot{Config: Defaults(l.env, l.paths), Origin: OriginNone, Path: path}
	if cfg, err := Parse([]byte(`{"version":1}`), "the defaults", l.env, l.paths); err == nil {
		off.Config = cfg
	}
	return off
}

// fallBack runs on the last good copy when the current file cannot be used. It never turns an
// invalid file into a more permissive configuration than the last one an admin delivered.
func (l *Loader) fallBack(off Snapshot, problem error) Snapshot {
	if off.Intent == "" {
		off.Intent = Observe // an unreadable file says nothing
	}
	off.Problem = problem
	off.Origin = OriginInvalid
	data, err := readLimited(l.paths.LastGoodFile())
	if errors.Is(err, fs.ErrNotExist) {
		return off
	}
	var cfg Config
	if err == nil {
		cfg, err = Parse(data, l.paths.LastGoodFile(), l.env, l.paths)
	}
	if err != nil {
		off.Problem = fmt.Errorf("%w; and the last good copy is unusable too: %v", problem, err)
		return off
	}
	return Snapshot{Config: cfg, Origin: OriginLastGood, Path: off.Path, Hash: hash(data), Problem: problem}
}

var (
	saysEnforce  = lazyregexp.New(`"mode"\s*:\s*"enforce"`)
	saysDisabled = lazyregexp.New(`"cowork_enabled"\s*:\s*false`)
)

// IntentOf is the mode a managed.json that does not parse clearly asks for: Enforce when it
// names mode enforce and does not switch coworkbridge off, Observe otherwise. It is read from
// the raw bytes, since the file is broken, and only ever used to choose how to fail.
func IntentOf(data []byte) Mode {
	if saysEnforce.Match(data) && !saysDisabled.Match(data) {
		return Enforce
	}
	return Observe
}

func (l *Loader) saveLastGood(data []byte) error {
	lg := l.paths.LastGoodFile()
	if old, err := os.ReadFile(lg); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := os.MkdirAll(l.paths.StateDir, 0o700); err != nil {
		return fmt.Errorf("save last good config: %w", err)
	}
	if err := renameio.WriteFile(lg, data, 0o600); err != nil {
		return fmt.Errorf("save last good config: %w", err)
	}
	return nil
}

// ReadSource reads a configuration file, bounded, as JSON: a configuration profile's property
// list is turned into its JSON form (checked, hashed and kept as last good in that form).
func ReadSource(path string) ([]byte, error) {
	data, err := readLimited(path)
	if err == nil && IsProfile(path) {
		if data, err = ProfileJSON(data); err != nil {
			err = profileInvalid(path, err)
		}
	}
	return data, err
}

// ReadSourceLines is ReadSource with a way back from a Problem's field to the line of the file
// on which it is written (0 when unknown), for JSON and XML property lists alike.
func ReadSourceLines(path string) ([]byte, func(field string) int, error) {
	raw, err := readLimited(path)
	if err != nil {
		return nil, nil, err
	}
	if !IsProfile(path) {
		return raw, func(field string) int { return FieldLine(raw, field) }, nil
	}
	line := indexPlist(raw).line
	data, err := ProfileJSON(raw)
	if err != nil {
		return nil, line, profileInvalid(path, err)
	}
	return data, line, nil
}

// profileInvalid is ProfileJSON's error as the configuration's problems, every one of them.
func profileInvalid(path string, err error) *InvalidError {
	var ie *InvalidError
	if errors.As(err, &ie) {
		return &InvalidError{Source: path, Problems: ie.Problems}
	}
	return &InvalidError{Source: path, Problems: []Problem{{Msg: err.Error()}}}
}

// errNotRegular: something other than a regular file stands at the configuration's name.
var errNotRegular = errors.New("not a regular file")

// readLimited reads at most the configuration's size limit of a regular file. It opens without
// waiting: a FIFO at the name would otherwise hold the reader (the daemon's watcher, or a host
// hook on every tool call) until someone writes into it.
func readLimited(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read managed config: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read managed config: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read managed config %s: %w (%v)", path, errNotRegular, fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read managed config %s: %w", path, err)
	}
	return data, nil
}

// HashOf is the hash a configuration's bytes (in their JSON form) are known by: Snapshot.Hash.
func HashOf(data []byte) string { return hash(data) }

func hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
