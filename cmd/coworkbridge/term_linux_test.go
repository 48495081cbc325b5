package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openTerminal returns the terminal end of a new pseudo-terminal, as a person's shell has it.
func openTerminal(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("pty number: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pty: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

// check with nothing to read and a person at the terminal prints its usage instead of waiting
// for a payload on stdin that will never come.
func TestCheckAtATerminalWithNoInputPrintsUsage(t *testing.T) {
	tty := openTerminal(t)
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"check"}, stdio{in: tty, out: &out, err: &errb})
	if code != exitUsage || !strings.Contains(errb.String(), "Usage: coworkbridge check") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}
