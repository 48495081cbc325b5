package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	_ "image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/corpus"
)

// line renders one record as the decision log does.
func line(host, rid, mode, decision, rule string, ts time.Time) string {
	r := map[string]any{"schema": 2, "ts": ts.UTC().Format(time.RFC3339Nano), "rid": rid, "session": "local_1", "agent": "cowork",
		"transport": "vm-spool", "mode": mode, "enforced": mode == "enforce", "tool": "Bash", "input": nil, "decision": decision,
		"latency_us": 500, "host": host}
	if rule != "" {
		r["rule"] = rule
	}
	if rule == "bash.unknown-executable" {
		r["reason"] = `coworkbridge rule bash.unknown-executable: command "terraform"`
	}
	b, _ := json.Marshal(r)
	return string(b) + "\n"
}

func sampleLog() string {
	day := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	b.WriteString(line("mac-a", "a1", "observe", "deny", "bash.rm-critical", day))
	b.WriteString(line("mac-a", "a2", "observe", "ask", "bash.unknown-executable", day))
	b.WriteString(line("mac-a", "a3", "observe", "ask", "bash.unknown-executable", day.Add(24*time.Hour)))
	b.WriteString(line("mac-a", "a4", "observe", "ask", "bash.unknown-executable", day.Add(24*time.Hour)))
	b.WriteString(line("mac-b", "b1", "enforce", "deny", "bash.rm-critical", day))
	b.WriteString(line("mac-b", "b2", "enforce", "allow", "", day))
	b.WriteString(line("mac-c", "c1", "observe", "allow", "", day))
	b.WriteString(line("mac-c", "c2", "observe", "ask", "path.dotenv", day))
	b.WriteString(line("mac-a", "a1", "observe", "deny", "bash.rm-critical", day)) // shipped twice
	b.WriteString(line("mac-c", "a1", "observe", "allow", "", day))                // same rid, another Mac
	b.WriteString("not a record\n{\"truncated\n")
	return b.String()
}

func TestAReportCountsWouldBeAndRealVerdictsByEveryBreakdown(t *testing.T) {
	rp := New()
	if err := rp.Add("d.jsonl", strings.NewReader(sampleLog())); err != nil {
		t.Fatal(err)
	}
	rp.Finish()
	if rp.Records != 9 || rp.Duplicates != 1 || rp.Invalid != 2 {
		t.Fatalf("records %d duplicates %d invalid %d", rp.Records, rp.Duplicates, rp.Invalid)
	}
	if c := rp.Rules["bash.rm-critical"]; c.WouldDeny != 1 || c.Deny != 1 {
		t.Errorf("rm-critical %+v: one would-be deny in observe, one real deny in enforce", c)
	}
	if c := rp.Hosts["mac-a"]; c.WouldAsk != 3 || c.WouldDeny != 1 || c.Records != 4 {
		t.Errorf("mac-a %+v", c)
	}
	if len(rp.Days) != 2 || rp.Days["2026-11-03"].WouldAsk != 2 {
		t.Errorf("days %v", rp.Days)
	}
	if strings.Join(rp.ReadyHosts, ",") != "mac-c" {
		t.Errorf("hosts ready for enforce %v, want mac-c alone (mac-a and mac-b would deny)", rp.ReadyHosts)
	}
	if len(rp.Suggest) != 0 {
		t.Errorf("suggestions %+v from one to three events each; a handful is an anecdote", rp.Suggest)
	}
	if len(rp.Objections) != 6 || rp.Objections[0].Host != "mac-a" || rp.Objections[0].Verdict() != "would deny" {
		t.Errorf("objections %+v: want the six denies and asks, oldest first", rp.Objections)
	}
	var text bytes.Buffer
	if err := rp.WriteText(&text, 10); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"9 (2 invalid lines skipped, 1 duplicates dropped)", "bash.rm-critical", "mac-c"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := rp.WriteJSON(&js); err != nil || !json.Valid(js.Bytes()) {
		t.Errorf("JSON report: %v", err)
	}
}

// Suggestions need a pattern: five events or more (and a rule at least 0.1% of calls).
func TestSuggestionsNeedAPatternNotASingleEvent(t *testing.T) {
	day := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i := range 5 {
		b.WriteString(line("mac-a", fmt.Sprintf("t%d", i), "observe", "ask", "bash.unknown-executable", day))
		b.WriteString(line("mac-a", fmt.Sprintf("d%d", i), "observe", "ask", "path.dotenv", day))
	}
	b.WriteString(line("mac-b", "once", "observe", "deny", "bash.rm-critical", day))
	rp := New()
	rp.Add("d.jsonl", strings.NewReader(b.String()))
	rp.Finish()
	var kinds []string
	for _, s := range rp.Suggest {
		kinds = append(kinds, s.Kind+":"+s.Name)
	}
	if got := strings.Join(kinds, " "); got != "allow_executable:terraform rule_observe:path.dotenv" {
		t.Errorf("suggestions %q: want terraform and path.dotenv (5 events each), nothing for a single deny", got)
	}
}

// A tool used all day with nothing objected to is in the "by tool" table too.
func TestByToolKeepsToolsWithNoObjection(t *testing.T) {
	day := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	in := line("mac-a", "r1", "observe", "deny", "bash.rm-critical", day) +
		strings.Replace(line("mac-a", "r2", "observe", "allow", "", day), `"tool":"Bash"`, `"tool":"Read"`, 1)
	rp := New()
	rp.Add("d.jsonl", strings.NewReader(in))
	rp.Finish()
	var text bytes.Buffer
	rp.WriteText(&text, 10)
	tools := text.String()[strings.Index(text.String(), "by tool"):]
	tools = tools[:strings.Index(tools, "\n\n")]
	if !strings.Contains(tools, "Bash") || !strings.Contains(tools, "Read") {
		t.Errorf("by tool:\n%s", tools)
	}
}

func TestALineLongerThanTheReportReadsIsSkippedNotFatal(t *testing.T) {
	rp := New()
	long := `{"decision":"allow","rid":"x","input":"` + strings.Repeat("a", MaxLine) + "\"}\n"
	in := long + line("mac-a", "r2", "observe", "allow", "", time.Now())
	if err := rp.Add("d", strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if rp.Records != 1 || rp.Invalid != 1 {
		t.Errorf("records %d invalid %d", rp.Records, rp.Invalid)
	}
}

// The HTML page is checked where it matters, in a real browser: it loads from a file with no
// network, the charts draw (the screenshot is not blank and shows the chart colours), and the
// text a reader needs is there. Chromium comes from Debian's package; CI installs it and sets
// COWORKBRIDGE_BROWSER=require.
func TestTheHTMLReportRendersItsChartsInARealBrowser(t *testing.T) {
	browser := findBrowser()
	if browser == "" {
		if os.Getenv("COWORKBRIDGE_BROWSER") == "require" {
			t.Fatal("no chromium on PATH, and COWORKBRIDGE_BROWSER=require")
		}
		t.Skip("no chromium on PATH (apt install chromium); set COWORKBRIDGE_BROWSER=require to make this a failure")
	}
	rp := New()
	rp.Add("d.jsonl", strings.NewReader(sampleLog()))
	rp.Finish()
	rp.Replay = sampleReplay()
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := rp.WriteHTML(&b, 10); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b.Bytes(), []byte("http://")) || bytes.Contains(b.Bytes(), []byte("https://")) || bytes.Contains(b.Bytes(), []byte("<script src")) ||
		bytes.Contains(b.Bytes(), []byte("url(")) {
		t.Error("the page refers to the network or loads a script")
	}
	os.WriteFile(page, b.Bytes(), 0o600)
	shot := filepath.Join(dir, "shot.png")
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1000,900",
		"--user-data-dir=" + filepath.Join(dir, "profile")}
	run := func(extra ...string) []byte {
		url := "file://" + page
		if len(extra) > 0 && strings.HasPrefix(extra[len(extra)-1], "#") {
			url, extra = url+extra[len(extra)-1], extra[:len(extra)-1]
		}
		cmd := exec.Command(browser, append(append(args, extra...), url)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", browser, err)
		}
		return out
	}
	run("--screenshot=" + shot)
	dom := string(run("--dump-dom"))
	for _, want := range []string{`id="chart-days"`, `id="chart-rules"`, "bash.rm-critical", "<rect", `id="records">9<`,
		`class="tick"`, `id="table-tools"`, `id="table-hosts"`, `<span class="shown" id="shown">6 of 6 shown</span>`,
		`id="replay-changes"`, `<span class="shown" id="replay-shown">3 of 3 shown</span>`, "the page lists 3 of the 7 changed calls"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	// The page's script ran: a link filtering the objections to one Mac, sorted by host.
	view := string(run("--dump-dom", "#filter=mac-b&sort=objections.1"))
	if !strings.Contains(view, `<span class="shown" id="shown">1 of 6 shown</span>`) || strings.Count(view, "<tr hidden") != 5 {
		t.Errorf("filtering by #filter=mac-b did not leave one objection shown")
	}
	if !strings.Contains(view, `aria-sort="ascending"`) {
		t.Errorf("#sort=objections.1 did not sort the objections")
	}
	hosts := regexp.MustCompile(`<tr[^>]*><td>2026-[^<]*</td><td>([^<]*)</td>`).FindAllStringSubmatch(view, -1)
	var order []string
	for _, h := range hosts {
		order = append(order, h[1])
	}
	if !slices.IsSorted(order) || len(order) != 6 {
		t.Errorf("objection rows by host after sorting: %v", order)
	}
	// The replay's changed calls have their own filter, which a link can carry too.
	replayed := string(run("--dump-dom", "#rfilter=mac-b"))
	if !strings.Contains(replayed, `<span class="shown" id="replay-shown">1 of 3 shown</span>`) ||
		!strings.Contains(replayed, `<span class="shown" id="shown">6 of 6 shown</span>`) {
		t.Errorf("#rfilter=mac-b did not filter the replay's calls alone")
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	colours, red := map[uint32]bool{}, 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[r>>8<<16|g>>8<<8|bl>>8] = true
			if r>>8 > 180 && g>>8 < 80 && bl>>8 < 80 { // the "denied" bars
				red++
			}
		}
	}
	if len(colours) < 8 || red < 20 {
		t.Errorf("the screenshot looks blank or chartless: %d colours, %d red pixels", len(colours), red)
	}
	if keep := os.Getenv("COWORKBRIDGE_REPORT_SHOT"); keep != "" {
		data, _ := os.ReadFile(shot)
		os.WriteFile(keep, data, 0o600)
	}
}

// sampleReplay is a candidate's replay as check's classifier would have filled it: two kinds of
// change, one of them with more calls than it lists.
func sampleReplay() *Replay {
	res := corpus.NewReplayed()
	res.Records, res.Replayed, res.GuardEvents = 9, 9, 0
	res.Changes = map[string]int{"deny->allow": 5, "allow->ask": 2}
	res.Examples = map[string][]corpus.Change{
		"deny->allow": {{RID: "b1", Host: "mac-b", Session: "local_1", Tool: "Bash", Input: `{"command":"rm -rf build"}`, OldRule: "bash.rm-critical"}},
		"allow->ask": {{RID: "c1", Host: "mac-c", Session: "local_1", Tool: "Bash", Input: `{"command":"terraform apply"}`, NewRule: "bash.unknown-executable"},
			{RID: "a9", Host: "mac-a", Session: "local_2", Tool: "Bash", Input: `{"command":"terraform plan"}`, NewRule: "bash.unknown-executable"}},
	}
	return &Replay{Candidate: "candidate.json", Fingerprint: "abc123", Result: res}
}

func TestAReplayIsListedWithTheMostFrequentChangeFirstAndItsDirection(t *testing.T) {
	r := sampleReplay()
	got := r.Changes()
	if len(got) != 2 || got[0].From != "deny" || got[0].To != "allow" || got[0].Count != 5 || got[0].Tighter() || !got[1].Tighter() {
		t.Errorf("changes %+v", got)
	}
	if r.Changed() != 7 || r.Listed() != 3 {
		t.Errorf("changed %d listed %d, want 7 and 3", r.Changed(), r.Listed())
	}
	for _, tc := range []struct {
		from, to string
		tighter  bool
	}{
		{"allow", "ask (rule in observe)", true},
		{"ask (rule in observe)", "ask", true},
		{"deny", "deny (rule in observe)", false},
		{"ask", "allow", false},
	} {
		if got := (ReplayChange{From: tc.from, To: tc.to}).Tighter(); got != tc.tighter {
			t.Errorf("%s -> %s: tighter %v, want %v", tc.from, tc.to, got, tc.tighter)
		}
	}
	rp := New()
	rp.Add("d.jsonl", strings.NewReader(sampleLog()))
	rp.Finish()
	rp.Replay = r
	var b bytes.Buffer
	rp.WriteText(&b, 10)
	for _, want := range []string{"replay under candidate.json (rules fingerprint abc123)", "deny → allow", "mac-b b1 Bash"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, b.String())
		}
	}
}

// A record shipped twice is counted once, and so judged again once.
func TestOnRecordSeesEachRecordOnce(t *testing.T) {
	rp := New()
	var rids []string
	rp.OnRecord = func(line []byte) {
		var r struct{ Host, RID string }
		json.Unmarshal(line, &r)
		rids = append(rids, r.Host+"/"+r.RID)
	}
	rp.Add("d.jsonl", strings.NewReader(sampleLog()))
	seen := map[string]int{}
	for _, id := range rids {
		seen[id]++
	}
	if len(rids) != 9 || seen["mac-a/a1"] != 1 || seen["mac-c/a1"] != 1 {
		t.Errorf("records handed on: %v", rids)
	}
}

func findBrowser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// BenchmarkReport measures throughput (b.SetBytes: MB/s, so time per GB) and the heap it
// needs, streaming records from a generator as a 1 GB log would come from disk.
func BenchmarkReport(b *testing.B) {
	const records = 200000
	var lines [][]byte
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range 4096 {
		lines = append(lines, []byte(line(fmt.Sprintf("mac-%03d", i%300), "", []string{"observe", "enforce"}[i%2],
			[]string{"allow", "allow", "allow", "ask", "deny"}[i%5], []string{"", "bash.unknown-executable", "path.dotenv", "bash.rm-critical"}[i%4], t0.Add(time.Duration(i)*time.Minute))))
	}
	var size int64
	for i := range records {
		size += int64(len(lines[i%len(lines)])) + 40
	}
	b.SetBytes(size)
	var peak uint64
	for b.Loop() {
		rp := New()
		pr, pw := io.Pipe()
		go func() {
			for i := range records {
				l := lines[i%len(lines)]
				// a distinct rid on every line, so that de-duplication does real work
				fmt.Fprintf(pw, "%s,\"rid\":\"%032x\"}\n", l[:len(l)-2], i)
			}
			pw.Close()
		}()
		if err := rp.Add("gen", pr); err != nil {
			b.Fatal(err)
		}
		rp.Finish()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	b.ReportMetric(float64(peak)/(1<<20), "heap-MiB")
}

// The page says what the terminal report says: the hosts a program was asked about on, the
// modes and when a host changed mode, and the rules that would deny apart from noisy asks.
func TestThePageCountsProgramHostsModesAndTheirChangesAndSeparatesDenies(t *testing.T) {
	day := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i, host := range []string{"mac-a", "mac-b", "mac-c"} {
		for j := range 10 {
			b.WriteString(line(host, fmt.Sprintf("u%d-%d", i, j), "observe", "ask", "bash.unknown-executable", day.Add(time.Duration(j)*time.Minute)))
			b.WriteString(line(host, fmt.Sprintf("d%d-%d", i, j), "observe", "deny", "bash.rm-critical", day.Add(time.Duration(j)*time.Minute)))
		}
	}
	b.WriteString(line("mac-a", "e1", "enforce", "deny", "bash.rm-critical", day.Add(time.Hour))) // mac-a switched to enforce
	rp := New()
	if err := rp.Add("d.jsonl", strings.NewReader(b.String())); err != nil {
		t.Fatal(err)
	}
	rp.Finish()
	var program *Suggestion
	for i, s := range rp.Suggest {
		if s.Kind == "allow_executable" && s.Name == "terraform" {
			program = &rp.Suggest[i]
		}
	}
	if program == nil || program.Hosts != 3 {
		t.Errorf("the program's suggestion %+v: want terraform on 3 hosts", program)
	}
	if len(rp.ModeChanges) != 1 || rp.ModeChanges[0].Host != "mac-a" || rp.ModeChanges[0].From != "observe" || rp.ModeChanges[0].To != "enforce" {
		t.Errorf("mode changes %+v", rp.ModeChanges)
	}
	var page bytes.Buffer
	if err := rp.WriteHTML(&page, 20); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, want := range []string{`<td id="modes">enforce 1, observe 60</td>`, `id="mode-changes"`, `<td>mac-a</td><td>observe</td><td>enforce</td>`,
		`id="review-denies"`, `<tr><td>bash.rm-critical</td>`, `<td>allow_executable</td><td>terraform</td><td class="n">30</td><td class="n">3</td>`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if i, j := strings.Index(html, `id="review-denies"`), strings.Index(html, `id="suggestions"`); i < 0 || j < 0 || strings.Contains(html[j:], "review_denies") {
		t.Error("the rules that would deny are listed with the noisy asks")
	}
}
