package facts

// IsShell reports a shell: a program whose -c, script operand or standard input is shell.
func IsShell(name string) bool { return shells.Has(name) }

// InterpreterFlag is the option that hands an interpreter its code (python -c, node -e), or ""
// for a program that is not an interpreter the analysis reads.
func InterpreterFlag(name string) string { return interpreters.Get()[name] }

// IsRawSender reports a program that sends its input to a network address as it is (nc, socat,
// telnet, openssl s_client).
func IsRawSender(name string) bool { return rawSenders.Has(name) }

// SaveOptions are the options naming where a downloader saves what it fetches.
type SaveOptions struct {
	Output     []string // the file
	RemoteName []string // saved under the URL's own name
	Dir        []string // the folder
}

// SaveOptionsOf is how a known downloader is told where to save, and whether it is one.
func SaveOptionsOf(name string) (SaveOptions, bool) {
	o, ok := fetchOutput.Get()[name]
	return o, ok
}

// IsFDPath reports a path that names a file descriptor (/dev/fd/3, /proc/self/fd/3).
func IsFDPath(p string) bool { return fdArg.MatchString(p) }
