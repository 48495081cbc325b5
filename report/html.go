package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"
)

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

// tick is one mark of a chart's value axis, with its gridline.
type tick struct {
	Label    string
	Pos      float64 // x of a vertical gridline, or y of a horizontal one
	From, To float64 // the gridline's extent across the plot
}

// chart is an SVG chart drawn by the template.
type chart struct {
	ID, Title, Axis string
	Width, Height   int
	Bars            []bar
	Ticks           []tick
	Vertical        bool
}

// segmentClasses are the verdicts drawn, in order, with their legend.
func segmentClasses() []struct{ Class, Label string } {
	return []struct{ Class, Label string }{{"deny", "denied"}, {"wdeny", "would deny"}, {"ask", "asked"}, {"wask", "would ask"}}
}

func segmentsOf(c *Counts) []segment {
	return []segment{{Class: "deny", Value: c.Deny}, {Class: "wdeny", Value: c.WouldDeny}, {Class: "ask", Value: c.Ask}, {Class: "wask", Value: c.WouldAsk}}
}

// niceMax is the top of a count axis for a largest value v, and its step: the smallest step of 1,
// 2 or 5 times a power of ten that spans v in at most six, the top the first step at or past v, so
// that the axis ends within one step of the largest bar: niceMax(37) is 40 by 10.
func niceMax(v int64) (top int64, step int64) {
	v = max(v, 1)
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if step = m * p; (v+step-1)/step <= 6 {
				return (v + step - 1) / step * step, step
			}
		}
	}
}

// dayChart stacks each day's objections in a column, with a count axis on the left.
func (rp *Report) dayChart() chart {
	days := sortedKeys(rp.Days)
	ch := chart{ID: "chart-days", Title: "Objections by day (UTC)", Axis: "objections", Width: 900, Height: 280, Vertical: true}
	var most int64
	for _, d := range days {
		most = max(most, rp.Days[d].Objections())
	}
	top, step := niceMax(most)
	left, plotH, base := 60.0, float64(ch.Height-70), float64(ch.Height-40)
	colW := (float64(ch.Width) - left - 10) / float64(max(len(days), 1))
	for v := int64(0); v <= top; v += step {
		y := base - plotH*float64(v)/float64(top)
		ch.Ticks = append(ch.Ticks, tick{Label: fmt.Sprint(v), Pos: y, From: left, To: float64(ch.Width - 10)})
	}
	every := max(1, (len(days)+11)/12) // at most about 12 dates under the columns
	for i, d := range days {
		b := bar{Label: d, Total: rp.Days[d].Objections()}
		if i%every != 0 {
			b.Label = ""
		}
		y := base
		for _, s := range segmentsOf(rp.Days[d]) {
			s.H = plotH * float64(s.Value) / float64(top)
			y -= s.H
			s.X, s.W, s.Y = left+float64(i)*colW+colW*0.1, colW*0.8, y
			b.Segments = append(b.Segments, s)
		}
		ch.Bars = append(ch.Bars, b)
	}
	return ch
}

// ruleChart draws the noisiest rules as horizontal stacked bars over a count axis.
func (rp *Report) ruleChart(top int) chart {
	rows := tableRows(rp.Rules, top, false)
	ch := chart{ID: "chart-rules", Title: "Noisiest rules", Axis: "objections", Width: 900, Height: 60 + 24*max(len(rows), 1)}
	var most int64
	for _, kv := range rows {
		most = max(most, kv.Value)
	}
	axisMax, step := niceMax(most)
	left, plotW, bottom := 260.0, 600.0, float64(20+24*max(len(rows), 1))
	for v := int64(0); v <= axisMax; v += step {
		ch.Ticks = append(ch.Ticks, tick{Label: fmt.Sprint(v), Pos: left + plotW*float64(v)/float64(axisMax), From: 14, To: bottom})
	}
	for i, kv := range rows {
		b := bar{Label: kv.Key, Total: kv.Value}
		x := left
		for _, s := range segmentsOf(rp.Rules[kv.Key]) {
			s.W = plotW * float64(s.Value) / float64(axisMax)
			s.X, s.Y, s.H = x, 20+float64(i)*24, 18
			x += s.W
			b.Segments = append(b.Segments, s)
		}
		ch.Bars = append(ch.Bars, b)
	}
	return ch
}

// table is one breakdown table of the page.
type table struct {
	ID, Title, Key string
	Rows           []groupRow
}

type groupRow struct {
	Key string
	C   *Counts
}

func (rp *Report) groups(top int) []table {
	mk := func(id, title, key string, m map[string]*Counts, quiet bool) table {
		g := table{ID: id, Title: title, Key: key}
		for _, kv := range tableRows(m, top, quiet) {
			g.Rows = append(g.Rows, groupRow{kv.Key, m[kv.Key]})
		}
		return g
	}
	days := table{ID: "table-days", Title: "By day (UTC)", Key: "day"}
	for _, d := range sortedKeys(rp.Days) {
		days.Rows = append(days.Rows, groupRow{d, rp.Days[d]})
	}
	return []table{
		mk("table-rules", "Rules", "rule", rp.Rules, false),
		mk("table-tools", "By tool", "tool", rp.Tools, true),
		mk("table-hosts", "By host", "host", rp.Hosts, true),
		mk("table-sessions", "By session", "host/session", rp.Sessions, false),
		days,
	}
}

// WriteHTML writes one self-contained page: no stylesheet, font, image or script from
// anywhere, charts as inline SVG, and a little inline script that sorts the tables and filters
// the list of objections (the page reads fine without it).
func (rp *Report) WriteHTML(w io.Writer, top int) error {
	return pageTemplate().Execute(w, map[string]any{
		"R": rp, "Days": rp.dayChart(), "Rules": rp.ruleChart(top), "Legend": segmentClasses(), "Groups": rp.groups(top),
	})
}

func pageTemplate() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"f":     func(v float64) string { return fmt.Sprintf("%.1f", v) },
		"join":  strings.Join,
		"modes": modes,
		// suggestions are those that review denies (a rule that would block often: an attack
		// stopped or a false deny), or the others (noisy asks, programs to allow).
		"suggestions": func(all []Suggestion, denies bool) []Suggestion {
			var out []Suggestion
			for _, s := range all {
				if (s.Kind == "review_denies") == denies {
					out = append(out, s)
				}
			}
			return out
		},
	}).Parse(pageHTML))
}

const pageHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>coworkbridge rollout report</title>
<style>
body{font:14px -apple-system,Helvetica,Arial,sans-serif;margin:24px;color:#1d1d1f;background:#fff;max-width:1200px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
.deny{fill:#c62828}.wdeny{fill:#ef9a9a}.ask{fill:#ef6c00}.wask{fill:#ffcc80}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}
i.deny{background:#c62828}i.wdeny{background:#ef9a9a}i.ask{background:#ef6c00}i.wask{background:#ffcc80}
svg text{font:11px -apple-system,Helvetica,Arial,sans-serif;fill:#444}svg .grid{stroke:#e0e0e0}svg .axis{stroke:#888}
.summary td{padding:2px 14px 2px 0}.broken{color:#c62828;font-weight:600}
table.data{border-collapse:collapse;margin:8px 0}table.data th,table.data td{border-bottom:1px solid #e5e5e5;padding:4px 10px;text-align:left;vertical-align:top}
table.data td.n,table.data th.n{text-align:right}table.data th{background:#f5f5f7;cursor:pointer;user-select:none}
table.data th[aria-sort=ascending]::after{content:" ▲"}table.data th[aria-sort=descending]::after{content:" ▼"}
td code{font:12px Menlo,monospace;white-space:pre-wrap;word-break:break-all;display:block;max-width:460px}
.v-denied{color:#c62828;font-weight:600}.v-asked{color:#ef6c00;font-weight:600}
input.filter{font:14px inherit;padding:4px 8px;width:420px}
#replay-changes tr.tighter td:nth-child(2),#replay tr.tighter td:nth-child(6){color:#c62828;font-weight:600}#replay-changes tr.looser td:nth-child(2),#replay tr.looser td:nth-child(6){color:#2e7d32;font-weight:600}
</style></head><body>
<h1>coworkbridge rollout report</h1>
<table class="summary">
<tr><td>Files</td><td>{{join .R.Files ", "}}</td></tr>
<tr><td>Records</td><td id="records">{{.R.Records}}</td></tr>
<tr><td>Skipped</td><td>{{.R.Invalid}} lines that are not records, {{.R.Duplicates}} duplicates</td></tr>
<tr><td>Period</td><td>{{if not .R.First.IsZero}}{{.R.First.UTC.Format "2006-01-02 15:04"}} to {{.R.Last.UTC.Format "2006-01-02 15:04 MST"}}{{end}}</td></tr>
<tr><td>Modes</td><td id="modes">{{modes .R.Modes}}</td></tr>
<tr><td>Hosts</td><td>{{len .R.Hosts}} ({{len .R.ReadyHosts}} with nothing a rule would deny)</td></tr>
<tr><td>Denied / asked</td><td>{{.R.Totals.Deny}} / {{.R.Totals.Ask}}</td></tr>
<tr><td>Would deny / would ask (observe)</td><td>{{.R.Totals.WouldDeny}} / {{.R.Totals.WouldAsk}}</td></tr>
{{range .R.Integrity}}<tr><td>Record integrity</td><td class="integrity{{if or .Broken .MissingHeads}} broken{{end}}">{{.Summary}}</td></tr>
{{end}}</table>
<p class="legend">{{range .Legend}}<span><i class="{{.Class}}"></i>{{.Label}}</span>{{end}}</p>
{{define "chart"}}<h2>{{.Title}}</h2>
<svg id="{{.ID}}" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="{{.Title}}">
{{if .Vertical}}{{range .Ticks}}<line class="grid" x1="{{f .From}}" x2="{{f .To}}" y1="{{f .Pos}}" y2="{{f .Pos}}"/><text class="tick" x="{{f .From}}" y="{{f .Pos}}" dx="-6" dy="4" text-anchor="end">{{.Label}}</text>
{{end}}<text x="14" y="{{f (index .Ticks 0).Pos}}" transform="rotate(-90 14 {{f (index .Ticks 0).Pos}})" dx="40">{{.Axis}}</text>
{{else}}{{range .Ticks}}<line class="grid" x1="{{f .Pos}}" x2="{{f .Pos}}" y1="{{f .From}}" y2="{{f .To}}"/><text class="tick" x="{{f .Pos}}" y="{{f .To}}" dy="14" text-anchor="middle">{{.Label}}</text>
{{end}}<text x="560" y="{{.Height}}" dy="-4" text-anchor="middle">{{.Axis}}</text>
{{end}}{{range .Bars}}{{$b := .}}{{range .Segments}}{{if gt .Value 0}}<rect class="{{.Class}}" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}"><title>{{$b.Label}}: {{.Value}} {{.Class}}</title></rect>{{end}}{{end}}
{{if $.Vertical}}{{else}}<text x="250" y="{{with index .Segments 0}}{{f .Y}}{{end}}" dy="13" text-anchor="end">{{.Label}}</text>{{end}}{{end}}
{{if .Vertical}}{{range $i, $b := .Bars}}{{if $b.Label}}{{with index $b.Segments 0}}<text x="{{f .X}}" y="{{$.Height}}" dy="-24">{{$b.Label}}</text>{{end}}{{end}}{{end}}{{end}}
</svg>{{end}}
{{template "chart" .Days}}
{{template "chart" .Rules}}
{{range .Groups}}<h2>{{.Title}}</h2>
<table class="data sortable" id="{{.ID}}"><thead><tr><th>{{.Key}}</th><th class="n">records</th><th class="n">would deny</th><th class="n">would ask</th><th class="n">denied</th><th class="n">asked</th></tr></thead><tbody>
{{range .Rows}}<tr><td>{{.Key}}</td><td class="n">{{.C.Records}}</td><td class="n">{{.C.WouldDeny}}</td><td class="n">{{.C.WouldAsk}}</td><td class="n">{{.C.Deny}}</td><td class="n">{{.C.Ask}}</td></tr>
{{end}}</tbody></table>
{{end}}
<h2>Hosts with nothing a rule would deny (candidates for enforce): {{len .R.ReadyHosts}} of {{len .R.Hosts}}</h2>
<p id="ready">{{join .R.ReadyHosts ", "}}</p>
{{if .R.ModeChanges}}<h2>Mode changes</h2>
<table class="data" id="mode-changes"><thead><tr><th>time (UTC)</th><th>host</th><th>from</th><th>to</th></tr></thead><tbody>
{{range .R.ModeChanges}}<tr><td>{{if not .TS.IsZero}}{{.TS.UTC.Format "2006-01-02 15:04:05"}}{{end}}</td><td>{{.Host}}</td><td>{{.From}}</td><td>{{.To}}</td></tr>
{{end}}</tbody></table>{{end}}
<h2>Review before enforcing: rules that would deny</h2>
{{with suggestions .R.Suggest true}}<table class="data" id="review-denies"><thead><tr><th>rule</th><th class="n">events</th><th class="n">hosts</th><th>why</th></tr></thead><tbody>
{{range .}}<tr><td>{{.Name}}</td><td class="n">{{.Count}}</td><td class="n">{{.Hosts}}</td><td>{{.Reason}}</td></tr>
{{end}}</tbody></table>{{else}}<p>None: no rule would deny often.</p>{{end}}
<h2>Suggested tuning: noisy asks and programs</h2>
{{with suggestions .R.Suggest false}}<table class="data" id="suggestions"><thead><tr><th>change</th><th>name</th><th class="n">events</th><th class="n">hosts</th><th>why</th></tr></thead><tbody>
{{range .}}<tr><td>{{.Kind}}</td><td>{{.Name}}</td><td class="n">{{.Count}}</td><td class="n">{{.Hosts}}</td><td>{{.Reason}}</td></tr>
{{end}}</tbody></table>{{else}}<p>None: no rule stands out, and no program was asked about often.</p>{{end}}
{{with .R.Replay}}<h2 id="replay-head">Replay under the candidate {{.Candidate}}</h2>
<p>Every record above judged again under the candidate policy{{if .Fingerprint}} (rules fingerprint <code>{{.Fingerprint}}</code>){{end}}:
{{.Result.Replayed}} of {{.Result.Records}} replayed ({{.Result.NotLogged}} whose input was not logged, {{.Result.GuardEvents}} guard events, which no policy decides).</p>
{{if .Result.Changes}}<table class="data sortable" id="replay-changes"><thead><tr><th>logged verdict</th><th>candidate's verdict</th><th class="n">calls</th></tr></thead><tbody>
{{range .Changes}}<tr class="{{if .Tighter}}tighter{{else}}looser{{end}}"><td>{{.From}}</td><td>{{.To}}</td><td class="n">{{.Count}}</td></tr>
{{end}}</tbody></table>
<p><input class="filter" data-table="replay" data-param="rfilter" type="search" placeholder="filter the changed calls" aria-label="filter the changed calls"> <span class="shown" id="replay-shown"></span>{{if lt .Listed .Changed}} (the page lists {{.Listed}} of the {{.Changed}} changed calls, the first of each kind){{end}}</p>
<table class="data sortable" id="replay"><thead><tr><th>time (UTC)</th><th>host</th><th>session</th><th>tool</th><th>logged</th><th>candidate</th><th>rule then</th><th>rule now</th><th>input (as logged, redacted)</th></tr></thead><tbody>
{{range .Changes}}{{$c := .}}{{range .Examples}}<tr class="{{if $c.Tighter}}tighter{{else}}looser{{end}}"><td>{{if not .TS.IsZero}}{{.TS.UTC.Format "2006-01-02 15:04:05"}}{{end}}</td><td>{{.Host}}</td><td>{{.Session}}</td><td>{{.Tool}}</td><td>{{$c.From}}</td><td>{{$c.To}}</td><td>{{.OldRule}}</td><td>{{.NewRule}}</td><td><code>{{.Input}}</code></td></tr>
{{end}}{{end}}</tbody></table>
{{else}}<p id="replay-none">No verdict would change.</p>{{end}}{{end}}
<h2>Flows ({{len .R.Flows}}{{if .R.FlowsDropped}}, the last read; {{.R.FlowsDropped}} earlier ones are in the log only{{end}})</h2>
<p>A call that sends, after its session took in content from outside and read private data: the shape of an injected exfiltration, where each call alone is ordinary.</p>
{{if .R.Flows}}<table class="data"><thead><tr><th>time (UTC)</th><th>host</th><th>session</th><th>tool</th><th>verdict</th><th>the flow</th></tr></thead><tbody>
{{range .R.Flows}}<tr><td>{{.TS.UTC.Format "2006-01-02 15:04:05"}}</td><td>{{.Host}}</td><td>{{.Session}}</td><td>{{.Tool}}</td><td class="v-{{.Decision}}">{{.Decision}}</td><td>{{range .Calls}}<div>{{.}}</div>{{end}}</td></tr>
{{end}}</tbody></table>{{else}}<p>None.</p>{{end}}
<h2>Every objection ({{len .R.Objections}}{{if .R.ObjectionsDropped}}, the last read; {{.R.ObjectionsDropped}} earlier ones are in the log only{{end}})</h2>
<p><input class="filter" id="filter" data-table="objections" data-param="filter" type="search" placeholder="filter: host, user, rule, command... (all words must match)" aria-label="filter the objections"> <span class="shown" id="shown"></span></p>
<table class="data sortable" id="objections"><thead><tr><th>time (UTC)</th><th>host</th><th>user</th><th>session</th><th>tool</th><th>rule</th><th>verdict</th><th>input (as logged, redacted)</th><th>effects</th></tr></thead><tbody>
{{range .R.Objections}}<tr><td>{{.TS.UTC.Format "2006-01-02 15:04:05"}}</td><td>{{.Host}}</td><td>{{.User}}</td><td>{{.Session}}</td><td>{{.Tool}}</td><td>{{.Rule}}</td><td class="v-{{.Verdict}}">{{.Verdict}}</td><td><code>{{.Input}}</code></td><td>{{range .Effects}}<code>{{.}}</code>{{end}}</td></tr>
{{end}}</tbody></table>
<script>
(function () {
  function cellValue(row, i) {
    var t = row.cells[i].textContent.trim();
    return /^-?\d+(\.\d+)?$/.test(t) ? parseFloat(t) : t.toLowerCase();
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th").forEach(function (th, i) {
      th.addEventListener("click", function () {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        table.querySelectorAll("th").forEach(function (o) { o.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a, i), y = cellValue(b, i);
          return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  // A link can carry a view: #filter=words&rfilter=words&sort=table-id.column (e.g. sort=objections.1).
  var params = new URLSearchParams(location.hash.slice(1));
  document.querySelectorAll("input.filter").forEach(function (filter) {
    var list = document.getElementById(filter.dataset.table), shown = filter.parentNode.querySelector(".shown");
    function apply() {
      var words = filter.value.toLowerCase().split(/\s+/).filter(Boolean), n = 0;
      Array.prototype.forEach.call(list.tBodies[0].rows, function (r) {
        var text = r.textContent.toLowerCase();
        var ok = words.every(function (w) { return text.indexOf(w) >= 0; });
        r.hidden = !ok;
        if (ok) n++;
      });
      shown.textContent = n + " of " + list.tBodies[0].rows.length + " shown";
    }
    filter.addEventListener("input", apply);
    var q = params.get(filter.dataset.param);
    if (q) filter.value = q;
    apply();
  });
  var s = params.get("sort");
  if (s) {
    var parts = s.split("."), t = document.getElementById(parts[0]);
    if (t && t.tHead) { var th = t.tHead.rows[0].cells[+parts[1] || 0]; if (th) th.click(); }
  }
})();
</script>
</body></html>
`
