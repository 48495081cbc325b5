// Package realpath rewrites the file paths of a tool call to where the Mac's links take them.
// Claude Code's file tools run on the Mac in Cowork's host loop and follow links, and the agent
// can make a link in its outputs from the VM (ln -s to any Mac path): a call must also be judged
// as the Mac will resolve it. It only reads the disk (lstat and readlink on the way); it judges
// nothing.
package realpath

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// pathKeys are the inputs of Claude Code's file tools that name a file or folder.
var pathKeys = []string{"file_path", "notebook_path", "path"}

// Call is p with each absolute path of its input replaced by where links take it (eval is
// filepath.EvalSymlinks but for tests); ok is false when no link changes any.
func Call(p claudehook.Payload, eval func(string) (string, error)) (claudehook.Payload, bool) {
	return rewrite(p, func(s string) string { return Path(s, eval) })
}

// rewrite is p with each absolute path of its input (cleaned) replaced by to's; ok is false when
// none changes.
func rewrite(p claudehook.Payload, to func(string) string) (claudehook.Payload, bool) {
	var in map[string]any
	if json.Unmarshal(p.ToolInput, &in) != nil {
		return p, false
	}
	changed := false
	for _, k := range pathKeys {
		s, _ := in[k].(string)
		if s == "" || !filepath.IsAbs(s) {
			continue
		}
		if r := to(filepath.Clean(s)); r != filepath.Clean(s) {
			in[k], changed = r, true
		}
	}
	if !changed {
		return p, false
	}
	data, err := json.Marshal(in)
	if err != nil {
		return p, false
	}
	p.ToolInput = data
	return p, true
}

// Resolve is Call, then each path written through the protected place it reaches by identity
// (the Identities places gives, asked for only when the call names an absolute path): the call
// as the Mac will carry it out, named as the map names what it reaches.
func Resolve(p claudehook.Payload, eval func(string) (string, error), places func() Identities) (claudehook.Payload, bool) {
	r, linked := Call(p, eval)
	var ids *Identities
	r, placed := rewrite(r, func(s string) string {
		if ids == nil {
			i := places()
			ids = &i
		}
		out, _ := ids.Place(s)
		return out
	})
	return r, linked || placed
}

// Path resolves the links of the longest part of path that exists, and keeps the rest: a file
// about to be written does not exist yet, but the folder link it is written through does.
func Path(path string, eval func(string) (string, error)) string {
	rest := ""
	for dir := path; ; dir = filepath.Dir(dir) {
		r, err := eval(dir)
		if err == nil {
			return filepath.Join(r, rest)
		}
		if !errors.Is(err, fs.ErrNotExist) || dir == filepath.Dir(dir) {
			return path
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// Where is, for a shell running on this machine as the user whose home is home, where links and
// the protected places by identity take a path a command names (~/x or /x): the path, and whether
// that is elsewhere. places is asked only when a path is looked up.
func Where(home string, eval func(string) (string, error), places func() Identities) func(string) (string, bool) {
	var ids *Identities
	return func(p string) (string, bool) {
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			if home == "" {
				return p, false
			}
			p = filepath.Join(home, rest)
		}
		if !filepath.IsAbs(p) {
			return p, false
		}
		p = filepath.Clean(p)
		r := Path(p, eval)
		if places != nil {
			if ids == nil {
				i := places()
				ids = &i
			}
			r, _ = ids.Place(r)
		}
		if r == p {
			return r, false
		}
		if rest, ok := strings.CutPrefix(r, filepath.Clean(home)+"/"); ok && home != "" {
			return "~/" + rest, true // the home as the map writes it, whatever its folder
		}
		return r, true
	}
}
