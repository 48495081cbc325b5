package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/corpus"
	"github.com/coworkbridge/coworkbridge/report"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

func cmdReport(ctx context.Context, args []string, sio stdio) int {
	fs := newFlags("report", "[--json | --html FILE] [--top N] [--candidate FILE] LOG...", "Summarises decision logs for a rollout: per rule, tool, host, session and day, what observe mode\n"+
		"would have denied or asked and what enforce mode did; the noisiest rules; the Macs where nothing\n"+
		"would have been denied (ready for enforce); the tuning the records suggest. LOG is a decision\n"+
		"log (its rotated files LOG.1, LOG.2... and its retained log are read too), or - for stdin; logs of\n"+
		"many Macs may be concatenated. Reads in bounded memory; records seen twice (same host and request\n"+
		"id) count once. Each named log's hash chain is verified: a broken link is named (file, line,\n"+
		"record) and the exit status is 1. With --candidate, every record is judged again under a candidate\n"+
		"managed.json and the report shows which verdicts it would change (as check --replay), with the\n"+
		"calls themselves.", sio)
	asJSON := fs.Bool("json", false, "print one JSON object instead of tables")
	html := fs.String("html", "", "write a self-contained HTML page (no network) with charts to FILE")
	top := fs.Int("top", 15, "rows per table")
	candidate := fs.String("candidate", "", "judge every record again under this managed.json and show what would change")
	var heads headList
	fs.Var(&heads, "head", "a chain head the daemon published (heartbeat's record_head, status): the log must still hold it (repeatable)")
	if code, done := fs.parse(args); done {
		return code
	}
	if fs.NArg() == 0 {
		return fs.usageError("name at least one decision log (or - for stdin)")
	}
	if *top < 1 {
		return fs.usageError("--top %d: give a number of rows of at least 1", *top)
	}
	if *asJSON && *html != "" {
		return fs.usageError("--json and --html cannot be combined")
	}
	rp := report.New()
	if *candidate != "" {
		if slices.Contains(fs.Args(), "-") {
			return fs.usageError("--candidate reads the logs from files: save stdin to a file first")
		}
		if err := replayInto(ctx, rp, *candidate); err != nil {
			fmt.Fprintln(sio.err, "coworkbridge report:", err)
			return exitFail
		}
	}
	for _, name := range fs.Args() {
		if err := addLog(rp, name, heads, sio); err != nil {
			fmt.Fprintln(sio.err, "coworkbridge report:", err)
			return exitFail
		}
	}
	rp.Finish()
	if rp.Records == 0 && rp.Invalid > 0 {
		// A report of nothing from a file of something is a wrong file, not a quiet fleet.
		fmt.Fprintf(sio.err, "coworkbridge report: none of the %d lines read is a decision-log record: is %s a decision log (decisions.jsonl)?\n",
			rp.Invalid, strings.Join(fs.Args(), ", "))
		return exitFail
	}
	if rp.Records == 0 && len(fs.Args()) > 0 {
		// REFERENCE: a file in which no line is a record is an error, an empty one included.
		fmt.Fprintf(sio.err, "coworkbridge report: %s holds no decision-log records (empty): is it the right file, and has the daemon recorded anything yet?\n",
			strings.Join(fs.Args(), ", "))
		return exitFail
	}
	code := exitOK
	if !rp.Whole() {
		code = exitFail
	}
	switch {
	case *asJSON:
		return reportDone(rp.WriteJSON(sio.out), code, sio)
	case *html != "":
		f, err := os.OpenFile(*html, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			fmt.Fprintf(sio.err, "coworkbridge report: cannot write the page: %v\n", err)
			return exitFail
		}
		if err := rp.WriteHTML(f, *top); err != nil {
			f.Close()
			return reportDone(err, code, sio)
		}
		if err := f.Close(); err != nil {
			return reportDone(err, code, sio)
		}
		fmt.Fprintf(sio.out, "wrote %s (%d records from %d file%s)\n", *html, rp.Records, len(rp.Files), plural(len(rp.Files)))
		for _, in := range rp.Integrity {
			if in.Broken != nil || len(in.MissingHeads) > 0 {
				fmt.Fprintf(sio.out, "%s\n", in.Summary())
			}
		}
		return code
	}
	return reportDone(rp.WriteText(sio.out, *top), code, sio)
}

// replayKeep is how many calls of each kind of change the report lists.
const replayKeep = 200

// replayInto has rp judge every record it counts again under the candidate's policy.
func replayInto(ctx context.Context, rp *report.Report, candidate string) error {
	u, err := policyOf(candidate)
	if err != nil {
		return err
	}
	res := corpus.NewReplayed()
	res.Keep = replayKeep
	rp.Replay = &report.Replay{Candidate: candidate, Fingerprint: u.Classifier.Fingerprint(), Result: res}
	rp.OnRecord = func(line []byte) { res.AddLine(ctx, u.Classifier, line) }
	return nil
}

// headList collects --head values.
type headList []string

func (h *headList) String() string     { return strings.Join(*h, ",") }
func (h *headList) Set(v string) error { *h = append(*h, v); return nil }

// addLog reads one log and, for a live log, its retained log and rotated files, oldest first, and
// verifies their chains.
func addLog(rp *report.Report, name string, heads []string, sio stdio) error {
	if name == "-" {
		return rp.Add("stdin", sio.in)
	}
	retained, files := telemetry.Archive(name)
	if len(retained) > 0 {
		if err := rp.Verify(telemetry.RetainedPath(name), retained); err != nil {
			return err
		}
	}
	if err := rp.Verify(name, files, heads...); err != nil {
		return err
	}
	for _, n := range append(retained, files...) {
		f, err := os.Open(n)
		if err != nil {
			return fmt.Errorf("open decision log: %w", err)
		}
		err = rp.Add(n, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func reportDone(err error, code int, sio stdio) int {
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge report:", err)
		return exitFail
	}
	return code
}
