package hosthook

import (
	"io"
	"os"
	"syscall"
)

// A changed settings file is opened without following a link and without waiting on a FIFO
// swapped in after the look.
const (
	oNoFollow = syscall.O_NOFOLLOW
	oNonBlock = syscall.O_NONBLOCK
)

func readFull(f *os.File, buf []byte) (int, error) {
	n, err := io.ReadFull(f, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return n, err
}
