package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// flags is a subcommand's flag set with the manners every subcommand shares: -h and --help print
// the synopsis and flags on stdout and exit 0; a bad flag, a bad flag value or a stray argument
// names itself on stderr and exits exitUsage (64, EX_USAGE), never a code with another meaning.
type flags struct {
	*flag.FlagSet
	name, synopsis, about string
	sio                   stdio
}

func newFlags(name, synopsis, about string, sio stdio) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and usage are printed here, once, where they belong
	fs.Usage = func() {}
	return &flags{FlagSet: fs, name: name, synopsis: synopsis, about: about, sio: sio}
}

// parse parses args; done reports that the command must return code now.
func (f *flags) parse(args []string) (code int, done bool) {
	err := f.Parse(args)
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		f.printUsage(f.sio.out)
		return exitOK, true
	}
	return f.usageError("%v", err), true
}

// usageError reports a misuse and returns exitUsage.
func (f *flags) usageError(format string, args ...any) int {
	fmt.Fprintf(f.sio.err, "coworkbridge %s: %s\nUsage: coworkbridge %s %s\nRun 'coworkbridge %s -h' for more.\n",
		f.name, fmt.Sprintf(format, args...), f.name, f.synopsis, f.name)
	return exitUsage
}

// noArgs reports stray arguments after the flags.
func (f *flags) noArgs() (int, bool) {
	if f.NArg() > 0 {
		return f.usageError("unexpected argument %q", f.Arg(0)), true
	}
	return 0, false
}

func (f *flags) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: coworkbridge %s %s\n\n%s\n", f.name, f.synopsis, f.about)
	var b strings.Builder
	f.VisitAll(func(fl *flag.Flag) {
		name, usage := flag.UnquoteUsage(fl)
		fmt.Fprintf(&b, "  --%s", fl.Name)
		if name != "" {
			fmt.Fprintf(&b, " %s", name)
		}
		fmt.Fprintf(&b, "\n      %s", usage)
		if fl.DefValue != "" && fl.DefValue != "false" {
			fmt.Fprintf(&b, " (default %s)", fl.DefValue)
		}
		b.WriteString("\n")
	})
	if b.Len() > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s", b.String())
	}
}

// choice is a flag whose value is one of a fixed set; a value outside it is refused by name.
type choice struct {
	value   string
	allowed []string
}

func (c *choice) String() string { return c.value }
func (c *choice) Set(v string) error {
	for _, a := range c.allowed {
		if v == a {
			c.value = v
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", v, strings.Join(c.allowed, ", "))
}
