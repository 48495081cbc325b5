package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/demo"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

func cmdDemo(ctx context.Context, args []string, sio stdio) int {
	fs := newFlags("demo", "[--mode enforce|observe] [--keep]", "Runs the daemon in-process on two Cowork-like sessions in a temporary folder and plays\n"+
		"realistic tool calls through the real hook, as Claude Code runs it. Needs only /bin/sh.", sio)
	mode := &choice{value: "enforce", allowed: []string{"enforce", "observe"}}
	fs.Var(mode, "mode", "the mode to demonstrate: enforce or observe")
	keep := fs.Bool("keep", false, "keep the temporary folder (sessions, daemon log, decision log) and print where it is")
	if code, done := fs.parse(args); done {
		return code
	}
	if code, done := fs.noArgs(); done {
		return code
	}
	tmp, err := os.MkdirTemp("", "coworkbridge-demo-")
	if err != nil {
		fmt.Fprintf(sio.err, "coworkbridge demo: cannot make a temporary folder: %v\n", err)
		return exitFail
	}
	if *keep {
		defer fmt.Fprintf(sio.out, "\nKept %s (sessions/, logs/daemon.log, logs/decisions.jsonl).\n", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := runDemo(ctx, tmp, managedconfig.Mode(mode.value), sio.out); err != nil {
		fmt.Fprintf(sio.err, "coworkbridge demo: %v\n", err)
		if data, rerr := os.ReadFile(filepath.Join(tmp, "logs", "daemon.log")); rerr == nil {
			fmt.Fprintf(sio.err, "daemon log:\n%s", tail(data, 4000))
		}
		return exitFail
	}
	return exitOK
}

func runDemo(ctx context.Context, tmp string, mode managedconfig.Mode, out io.Writer) error {
	w, err := demo.NewWorld(tmp, mode)
	if err != nil {
		return err
	}
	started := time.Now()
	d, stop, err := w.Start(ctx, versionString())
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(out, "coworkbridge demo: mode %s, two Cowork-like sessions under %s\n", mode, filepath.Join(tmp, "sessions"))
	if err := w.WaitHooked(ctx, 15*time.Second); err != nil {
		return err
	}
	fmt.Fprintf(out, "Both sessions carry the %s hook %d ms after the daemon started.\n\n", mode, time.Since(started).Milliseconds())

	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tsession\ttool\tinput\thook answer\tpolicy verdict (rule)\tms\t")
	unexpected := 0
	for i, c := range demo.Script() {
		res, err := w.Play(ctx, c)
		if err != nil {
			return fmt.Errorf("call %d: %w", i+1, err)
		}
		mark := ""
		if !w.Expected(c, res) {
			mark, unexpected = "  <- unexpected", unexpected+1
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\n", i+1, short(filepath.Base(w.Sessions[c.Session]), 14), c.Tool,
			short(c.Summary(), 44), answerText(res.Answer), verdictText(res), float64(res.Took.Microseconds())/1000, mark)
	}
	tw.Flush()
	if mode == managedconfig.Observe {
		fmt.Fprintln(out, "\nObserve mode: every call went through; the decision log says what enforce mode would have done.")
	}
	fmt.Fprintln(out, "\nHealth:")
	snap := demo.Health(d, versionString(), started)
	statusView{Now: time.Now(), Running: true, Snapshot: &snap}.render(out)
	if unexpected > 0 {
		return fmt.Errorf("%d call(s) were not answered as the default policy should", unexpected)
	}
	return nil
}

func answerText(d claudehook.Decision) string {
	if d == claudehook.Allow {
		return "no objection"
	}
	return string(d)
}

func verdictText(r demo.Result) string {
	if r.Rule == "" {
		return string(r.Verdict)
	}
	return string(r.Verdict) + " (" + r.Rule + ")"
}

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
