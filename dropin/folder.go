package dropin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/coworkbridge/coworkbridge/allowlist"
)

// ErrWeakened: another managed-settings file, which the CLI merges with ours, switches off or
// widens what ours sets, or starts programs of its own with the managed layer's authority.
var ErrWeakened = errors.New("another managed-settings file weakens coworkbridge's drop-in")

// The managed file beside the drop-in folder, read by the CLI with the drop-ins.
const managedFile = "managed-settings.json"

// secureFolder makes a folder of the managed layer root's, not writable by group or others,
// whatever it was: one the user could write would let the agent add a drop-in, or rename ours
// away with the folder. Only root can; for anyone else it is a no-op that Check reports.
func secureFolder(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("examine %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder (%v); remove it and install again", dir, fi.Mode().Type())
	}
	if err := os.Lchown(dir, 0, 0); err != nil {
		return fmt.Errorf("give %s to root: %w", dir, err)
	}
	if err := os.Chmod(dir, fi.Mode().Perm()&^0o022); err != nil {
		return fmt.Errorf("set the mode of %s: %w", dir, err)
	}
	return nil
}

// checkFolders reports the drop-in folder, or the managed settings' folder above it, being a
// link, not root's, or writable by group or others.
func checkFolders(dir string) []error {
	var probs []error
	for _, d := range []string{dir, filepath.Dir(dir)} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue // Check reports the drop-in missing
		case !fi.IsDir():
			probs = append(probs, fmt.Errorf("%w: %s is not a folder (%v)", ErrUnsafe, d, fi.Mode().Type()))
		case fi.Mode().Perm()&0o022 != 0:
			probs = append(probs, fmt.Errorf("%w: the folder %s has mode %v, so others can add or replace managed settings", ErrUnsafe, d, fi.Mode().Perm()))
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
			probs = append(probs, fmt.Errorf("%w: the folder %s is owned by uid %d", ErrUnsafe, d, st.Uid))
		}
	}
	return probs
}

// checkSiblings reads every other file the CLI merges with our drop-in (the folder's other
// .json files and managed-settings.json above it) and reports each that weakens it.
func checkSiblings(dir string) []error {
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	names = append(names, filepath.Join(filepath.Dir(dir), managedFile))
	var probs []error
	for _, p := range names {
		if filepath.Base(p) == Name && filepath.Dir(p) == dir {
			continue
		}
		if what := weakens(p); len(what) > 0 {
			probs = append(probs, fmt.Errorf("%w: %s sets %s; remove it or take those keys out",
				ErrWeakened, p, strings.Join(what, ", ")))
		}
	}
	return probs
}

// weakeningFalse are the managed switches our drop-in sets to true; a sibling that sets one to
// false undoes it where it sorts after ours.
var weakeningFalse = []string{"allowManagedHooksOnly", "allowManagedMcpServersOnly", "disableSkillShellExecution"}

// weakens lists what a managed-settings file sets that switches hooks off, adds managed hooks or
// programs of its own, widens the MCP list or changes the environment of every call.
func weakens(path string) []string {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxInstalled {
		return []string{"something this check cannot read (a link, a special file or one over 1 MiB)"}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return []string{"something this check cannot read: " + err.Error()}
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil // invalid JSON stops the CLI from starting at all; the CLI says so loudly
	}
	var what []string
	for k, v := range doc {
		switch {
		case slices.Contains(weakeningFalse, k):
			if strings.TrimSpace(string(v)) == "false" {
				what = append(what, k+": false")
			}
		case k == "disableAllHooks":
			if strings.TrimSpace(string(v)) != "false" {
				what = append(what, k)
			}
		case k == "env", k == "allowedMcpServers", allowlist.Dangerous(k): // hooks among them
			what = append(what, k)
		}
	}
	slices.Sort(what)
	return what
}
