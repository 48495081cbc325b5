package hosthook

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
)

// ownSession is the folder of the Cowork session a call comes from: the session whose .claude
// folder CLAUDE_CONFIG_DIR names (Cowork sets it when it starts the CLI), or "" for a CLI run
// outside every session.
func ownSession(configDir string, roots []string) string {
	if configDir == "" || !filepath.IsAbs(configDir) || filepath.Base(filepath.Clean(configDir)) != session.ClaudeDir {
		return ""
	}
	p, ok := session.Locate(roots, filepath.Dir(filepath.Clean(configDir)))
	if !ok || !p.IsSession() {
		return ""
	}
	return p.Dir
}

// pathKeys are the inputs of Claude Code's file tools that name a file or folder on the Mac.
var pathKeys = []string{"file_path", "notebook_path", "path"}

// judge evaluates a call from the session own as its paths are written and, when a link on the
// Mac takes one elsewhere (a link the agent made in its outputs from the VM), as the Mac will
// resolve them: the stricter verdict stands.
func judge(cls *classifier.Classifier, p claudehook.Payload, own string, evalSymlinks func(string) (string, error)) classifier.Verdict {
	v := cls.EvaluateFrom(context.Background(), p, own)
	if v.Decision == claudehook.Deny {
		return v
	}
	resolved, ok := resolvedCall(p, evalSymlinks)
	if !ok {
		return v
	}
	if w := cls.EvaluateFrom(context.Background(), resolved, own); stricter(w, v) {
		w.Reason += " (the path is a link to it)"
		return w
	}
	return v
}

func stricter(a, b classifier.Verdict) bool {
	rank := map[claudehook.Decision]int{claudehook.Allow: 0, claudehook.Ask: 1, claudehook.Deny: 2}
	return rank[a.Decision] > rank[b.Decision]
}

// resolvedCall is p with each absolute path of its input replaced by where the Mac's links take
// it; ok is false when no link changes any.
func resolvedCall(p claudehook.Payload, evalSymlinks func(string) (string, error)) (claudehook.Payload, bool) {
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
		if r := realPath(filepath.Clean(s), evalSymlinks); r != filepath.Clean(s) {
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

// realPath resolves the links of the longest part of path that exists, and keeps the rest: a
// file about to be written does not exist yet, but the folder link it is written through does.
func realPath(path string, evalSymlinks func(string) (string, error)) string {
	rest := ""
	for dir := path; ; dir = filepath.Dir(dir) {
		r, err := evalSymlinks(dir)
		if err == nil {
			return filepath.Join(r, rest)
		}
		if !errors.Is(err, fs.ErrNotExist) || dir == filepath.Dir(dir) {
			return path
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// ownSessionOf is ownSession for the configuration in force.
func ownSessionOf(env managedconfig.Env, cfg managedconfig.Config) string {
	return ownSession(getenv(env, "CLAUDE_CONFIG_DIR"), cfg.SessionsRoots)
}
