package runfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A file is read as the call's shell would find it: the Mac's paths and ~ for a shell on the
// Mac, the session's folder as the VM mounts it for a shell in the VM; a missing file runs
// nothing; anything else that cannot be seen the same way is an error, never "".
func TestAFileIsReadWhereTheCallsShellFindsItOrNotAtAll(t *testing.T) {
	home, sess, outside := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, "bin/x.sh"), "echo home")
	write(t, filepath.Join(sess, "outputs/run.sh"), "echo session")
	write(t, filepath.Join(outside, "secret.sh"), "echo outside")
	if err := os.Symlink(filepath.Join(outside, "secret.sh"), filepath.Join(sess, "outputs/link.sh")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(sess, "outputs/fifo.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(sess, "outputs/big.sh"), strings.Repeat("#", facts.MaxRunFileBytes+1))
	write(t, filepath.Join(sess, "outputs/app"), "\x7fELF\x02\x01\x01\x00"+strings.Repeat("\x00", facts.MaxRunFileBytes))
	mac := Reader{Home: home}
	vm := Reader{Session: sess, VM: true}
	for _, tc := range []struct {
		name string
		r    Reader
		path string
		want string // "" with wantErr false: nothing runs
		err  bool
	}{
		{"a path on the Mac", mac, filepath.Join(home, "bin/x.sh"), "echo home", false},
		{"a path from ~", mac, "~/bin/x.sh", "echo home", false},
		{"another user's home", mac, "~ada/bin/x.sh", "", true},
		{"a missing file runs nothing", mac, filepath.Join(home, "nope.sh"), "", false},
		{"a relative path", mac, "bin/x.sh", "", true},
		{"the session as the VM mounts it", vm, "/sessions/brave-x/mnt/outputs/run.sh", "echo session", false},
		{"a missing file in the session", vm, "/sessions/brave-x/mnt/outputs/none.sh", "", false},
		{"a folder of the user's mounted beside the session's", vm, "/sessions/brave-x/mnt/project/run.sh", "", true},
		{"a link out of the session", vm, "/sessions/brave-x/mnt/outputs/link.sh", "", true},
		{"a FIFO, without waiting on it", vm, "/sessions/brave-x/mnt/outputs/fifo.sh", "", true},
		{"a script too large to judge", vm, "/sessions/brave-x/mnt/outputs/big.sh", "", true},
		{"a large compiled program: its head", vm, "/sessions/brave-x/mnt/outputs/app", ("\x7fELF\x02\x01\x01\x00" + strings.Repeat("\x00", 512))[:512], false},
		{"a folder only the VM has", vm, "/tmp/run.sh", "", true},
		{"a Mac path for a shell in the VM", vm, filepath.Join(home, "bin/x.sh"), "", true},
		{"climbing out of the mount", vm, "/sessions/brave-x/mnt/../../etc/passwd", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.r.Read(tc.path)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("Read(%s) = %q, %v; want %q, error %v", tc.path, got, err, tc.want, tc.err)
			}
			if err != nil && tc.name == "a folder only the VM has" && !errors.Is(err, ErrOutOfReach) {
				t.Fatalf("error %v is not ErrOutOfReach", err)
			}
		})
	}
}
