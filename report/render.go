package report

import (
	"encoding/json"
	"fmt"
	"html/template"
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
	p("hosts:\t%d, sessions: %d\n", len(rp.Hosts), len(rp.Sessions))
	c := rp.Totals
	p("verdicts:\tdenied %d, asked %d; in observe would have denied %d, asked %d; allowed %d\n\n", c.Deny, c.Ask, c.WouldDeny, c.WouldAsk, c.Allow)

	table := func(title string, m map[string]*Counts) {
		p("%s\n", title)
		p("  name\trecords\twould deny\twould ask\tdenied\tasked\n")
		for _, kv := range topCounts(m, top) {
			c := m[kv.Key]
			if c.Objections() == 0 {
				break
			}
			p("  %s\t%d\t%d\t%d\t%d\t%d\n", kv.Key, c.Records, c.WouldDeny, c.WouldAsk, c.Deny, c.Ask)
		}
		p("\n")
	}
	table("noisiest rules", rp.Rules)
	table("by tool", rp.Tools)
	table("by host", rp.Hosts)
	table("by session (host/session)", rp.Sessions)

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
	p("\nsuggested tuning\n")
	if len(rp.Suggest) == 0 {
		p("  none: no rule stands out, and no program was asked about often\n")
	}
	for _, s := range rp.Suggest {
		p("  %s %s\t%d\t%s\n", s.Kind, s.Name, s.Count, s.Reason)
	}
	return tw.Flush()
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

// bar is one bar of a chart, its segments in the order of the legend.
type bar struct {
	Label    string
	Segments []segment
	Total    int64
}

type segment struct {
	Class      string
	Value      int64
	X, W, Y, H float64
}

// chart is an SVG chart drawn by the template: no script, no network.
type chart struct {
	Title         string
	Width, Height int
	Bars          []bar
	Vertical      bool
}

// segmentClasses are the verdicts drawn, in order, with their legend.
var segmentClasses = []struct{ Class, Label string }{
	{"deny", "denied"}, {"wdeny", "would deny"}, {"ask", "asked"}, {"wask", "would ask"},
}

func segmentsOf(c *Counts) []segment {
	return []segment{{Class: "deny", Value: c.Deny}, {Class: "wdeny", Value: c.WouldDeny}, {Class: "ask", Value: c.Ask}, {Class: "wask", Value: c.WouldAsk}}
}

// dayChart stacks each day's objections in a column.
func (rp *Report) dayChart() chart {
	days := sortedKeys(rp.Days)
	ch := chart{Title: "Objections by day", Width: 900, Height: 260, Vertical: true}
	var most int64 = 1
	for _, d := range days {
		most = max(most, rp.Days[d].Objections())
	}
	colW := float64(ch.Width-60) / float64(max(len(days), 1))
	plotH := float64(ch.Height - 50)
	every := max(1, (len(days)+14)/15) // at most about 15 labels under the columns
	for i, d := range days {
		b := bar{Label: d, Total: rp.Days[d].Objections()}
		if i%every != 0 {
			b.Label = ""
		}
		y := plotH + 10
		for _, s := range segmentsOf(rp.Days[d]) {
			s.H = plotH * float64(s.Value) / float64(most)
			y -= s.H
			s.X, s.W, s.Y = 50+float64(i)*colW+colW*0.1, colW*0.8, y
			b.Segments = append(b.Segments, s)
		}
		ch.Bars = append(ch.Bars, b)
	}
	return ch
}

// ruleChart draws the noisiest rules as horizontal stacked bars.
func (rp *Report) ruleChart(top int) chart {
	rows := topCounts(rp.Rules, top)
	for len(rows) > 0 && rows[len(rows)-1].Value == 0 {
		rows = rows[:len(rows)-1] // rules that objected to nothing have no bar
	}
	ch := chart{Title: "Noisiest rules", Width: 900, Height: 30 + 24*max(len(rows), 1)}
	var most int64 = 1
	for _, kv := range rows {
		most = max(most, kv.Value)
	}
	for i, kv := range rows {
		c := rp.Rules[kv.Key]
		b := bar{Label: kv.Key, Total: kv.Value}
		x := 260.0
		for _, s := range segmentsOf(c) {
			s.W = 560 * float64(s.Value) / float64(most)
			s.X, s.Y, s.H = x, 20+float64(i)*24, 18
			x += s.W
			b.Segments = append(b.Segments, s)
		}
		ch.Bars = append(ch.Bars, b)
	}
	return ch
}

// WriteHTML writes one self-contained page: no script, no stylesheet or font from anywhere,
// charts drawn as inline SVG.
func (rp *Report) WriteHTML(w io.Writer, top int) error {
	var text strings.Builder
	if err := rp.WriteText(&text, top); err != nil {
		return err
	}
	return page.Execute(w, map[string]any{
		"R": rp, "Days": rp.dayChart(), "Rules": rp.ruleChart(top), "Legend": segmentClasses, "Text": text.String(),
	})
}

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"f": func(v float64) string { return fmt.Sprintf("%.1f", v) },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>coworkbridge rollout report</title>
<style>
body{font:14px -apple-system,Helvetica,Arial,sans-serif;margin:24px;color:#1d1d1f;background:#fff}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
.deny{fill:#c62828}.wdeny{fill:#ef9a9a}.ask{fill:#ef6c00}.wask{fill:#ffcc80}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}
i.deny{background:#c62828}i.wdeny{background:#ef9a9a}i.ask{background:#ef6c00}i.wask{background:#ffcc80}
svg text{font:11px -apple-system,Helvetica,Arial,sans-serif;fill:#444}
pre{background:#f5f5f7;padding:12px;overflow:auto;font:12px Menlo,monospace}
.summary td{padding:2px 14px 2px 0}.broken{color:#c62828;font-weight:600}
</style></head><body>
<h1>coworkbridge rollout report</h1>
<table class="summary">
<tr><td>Records</td><td id="records">{{.R.Records}}</td></tr>
<tr><td>Period</td><td>{{if not .R.First.IsZero}}{{.R.First.UTC.Format "2006-01-02 15:04"}} to {{.R.Last.UTC.Format "2006-01-02 15:04 MST"}}{{end}}</td></tr>
<tr><td>Hosts</td><td>{{len .R.Hosts}} ({{len .R.ReadyHosts}} with nothing a rule would deny)</td></tr>
<tr><td>Denied / asked</td><td>{{.R.Totals.Deny}} / {{.R.Totals.Ask}}</td></tr>
<tr><td>Would deny / would ask (observe)</td><td>{{.R.Totals.WouldDeny}} / {{.R.Totals.WouldAsk}}</td></tr>
{{range .R.Integrity}}<tr><td>Record integrity</td><td class="integrity{{if or .Broken .MissingHeads}} broken{{end}}">{{.Summary}}</td></tr>
{{end}}</table>
<p class="legend">{{range .Legend}}<span><i class="{{.Class}}"></i>{{.Label}}</span>{{end}}</p>
{{define "chart"}}<h2>{{.Title}}</h2>
<svg id="{{if .Vertical}}chart-days{{else}}chart-rules{{end}}" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="{{.Title}}">
{{range .Bars}}{{$b := .}}{{range .Segments}}{{if gt .Value 0}}<rect class="{{.Class}}" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}"><title>{{$b.Label}}: {{.Value}}</title></rect>{{end}}{{end}}
{{if $.Vertical}}{{else}}<text x="250" y="{{with index .Segments 0}}{{f .Y}}{{end}}" dy="13" text-anchor="end">{{.Label}}</text>{{end}}{{end}}
{{if .Vertical}}{{range $i, $b := .Bars}}{{if $b.Label}}{{with index $b.Segments 0}}<text x="{{f .X}}" y="{{$.Height}}" dy="-24">{{$b.Label}}</text>{{end}}{{end}}{{end}}{{end}}
</svg>{{end}}
{{template "chart" .Days}}
{{template "chart" .Rules}}
<h2>Tables</h2>
<pre>{{.Text}}</pre>
</body></html>
`))
