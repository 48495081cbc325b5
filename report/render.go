package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the report as one JSON object, for scripts.
func (rp *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rp)
}

// WriteText writes the report as tables for a terminal; top bounds each table's rows.
func (rp *Report) WriteText(w io.Writer, top int) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }
	p("coworkbridge rollout report\n")
	p("files:\t%s\n", strings.Join(rp.Files, ", "))
	p("records:\t%d (%d invalid lines skipped, %d duplicates dropped)\n", rp.Records, rp.Invalid, rp.Duplicates)
	for _, in := range rp.Integrity {
		p("integrity:\t%s\n", in.Summary())
	}
	if !rp.First.IsZero() {
		p("period:\t%s to %s\n", rp.First.UTC().Format("2006-01-02 15:04"), rp.Last.UTC().Format("2006-01-02 15:04 MST"))
	}
	p("modes:\t%s\n", modes(rp.Modes))
	for _, m := range rp.ModeChanges {
		p("mode change:\t%s %s: %s to %s\n", m.TS.UTC().Format("2006-01-02 15:04:05"), m.Host, m.From, m.To)
	}
	p("hosts:\t%d, sessions: %d\n", len(rp.Hosts), len(rp.Sessions))
	c := rp.Totals
	p("verdicts:\tdenied %d, asked %d; in observe would have denied %d, asked %d; allowed %d\n\n", c.Deny, c.Ask, c.WouldDeny, c.WouldAsk, c.Allow)

	table := func(title string, m map[string]*Counts, quiet bool) {
		p("%s\n", title)
		p("  name\trecords\twould deny\twould ask\tdenied\tasked\n")
		for _, kv := range tableRows(m, top, quiet) {
			c := m[kv.Key]
			p("  %s\t%d\t%d\t%d\t%d\t%d\n", kv.Key, c.Records, c.WouldDeny, c.WouldAsk, c.Deny, c.Ask)
		}
		p("\n")
	}
	table("noisiest rules", rp.Rules, false)
	table("by tool", rp.Tools, true)
	table("by host", rp.Hosts, true)
	table("by session (host/session)", rp.Sessions, false)

	p("by day\n  day\trecords\twould deny\twould ask\tdenied\tasked\n")
	for _, day := range sortedKeys(rp.Days) {
		c := rp.Days[day]
		p("  %s\t%d\t%d\t%d\t%d\t%d\n", day, c.Records, c.WouldDeny, c.WouldAsk, c.Deny, c.Ask)
	}
	p("\nhosts with nothing a rule would deny (candidates for enforce): %d of %d\n", len(rp.ReadyHosts), len(rp.Hosts))
	for i, h := range rp.ReadyHosts {
		if i == top {
			p("  ... and %d more\n", len(rp.ReadyHosts)-top)
			break
		}
		p("  %s\n", h)
	}
	p("\nflows: a send after the session took in untrusted content and read private data: %d\n", len(rp.Flows)+int(rp.FlowsDropped))
	for i, f := range rp.Flows {
		if i == top {
			p("  ... and %d more (--json lists them)\n", len(rp.Flows)-top)
			break
		}
		p("  %s %s/%s %s %s (%s)\n", f.TS.UTC().Format("2006-01-02 15:04:05"), f.Host, f.Session, f.Tool, f.Decision, f.Rule)
		for _, c := range f.Calls {
			p("      %s\n", c)
		}
	}
	p("\nsuggested tuning\n")
	if len(rp.Suggest) == 0 {
		p("  none: no rule stands out, and no program was asked about often\n")
	}
	for _, s := range rp.Suggest {
		p("  %s %s\t%d\t%s\n", s.Kind, s.Name, s.Count, s.Reason)
	}
	if rp.Replay != nil {
		rp.Replay.writeText(p)
	}
	return tw.Flush()
}

// tableRows are a table's rows: the most objected to first; with quiet, then the groups with
// no objection by how many calls they made (a tool used all day with nothing objected to is
// evidence too), up to top rows.
func tableRows(m map[string]*Counts, top int, quiet bool) []KV {
	var rows []KV
	for _, kv := range topCounts(m, len(m)) {
		if len(rows) == top {
			break
		}
		if m[kv.Key].Objections() > 0 {
			rows = append(rows, kv)
		}
	}
	if !quiet {
		return rows
	}
	var rest []KV
	for k, c := range m {
		if c.Objections() == 0 {
			rest = append(rest, KV{k, c.Records})
		}
	}
	sort.Slice(rest, func(i, j int) bool {
		if rest[i].Value != rest[j].Value {
			return rest[i].Value > rest[j].Value
		}
		return rest[i].Key < rest[j].Key
	})
	for _, kv := range rest {
		if len(rows) == top {
			break
		}
		rows = append(rows, kv)
	}
	return rows
}

func modes(m map[string]int64) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
