// Command fleetsim runs a simulated fleet: N Macs' decision logs, written by coworkbridge's own
// record writer at an agent's pace, shipped by collectors running deploy/shipping/otelcol as
// written (one per group of Macs, as a gateway would, or one per Mac) into a real OTLP log store
// (VictoriaLogs). It then asks the store what a security team asks, checks the answers against
// what was written, and reports records/s per collector, end-to-end delay and loss. It does not
// run daemons or hooks (the record writer and heartbeat lines stand for them: the shipping path
// starts at the logs); the last -cli-macs Macs also export their CLI's own events to their own
// collector, which names the Mac. It is not a test: the numbers are for the notes.
//
//	go run ./fleetsim -macs 10,100 -victoria-logs /path/to/victoria-logs
//
// Without -victoria-logs it installs VictoriaLogs with go install (about 20 MB, one minute).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

func main() {
	macs := flag.String("macs", "10,100", "fleet sizes to simulate")
	perCollector := flag.Int("macs-per-collector", 10, "Macs one collector ships (1: an agent per Mac; more: a gateway)")
	rate := flag.Float64("rate", 2, "records per second per Mac (an agent's calls, a few sessions at a time)")
	duration := flag.Duration("duration", 30*time.Second, "how long the fleet writes")
	vl := flag.String("victoria-logs", "", "the VictoriaLogs binary (default: go install it)")
	cliMacs := flag.Int("cli-macs", 3, "Macs whose CLI also exports its own events, each through a collector of its own")
	flag.Parse()
	if err := run(fleet{sizes: *macs, perCollector: *perCollector, cliMacs: *cliMacs, rate: *rate, duration: *duration}, *vl); err != nil {
		fmt.Fprintln(os.Stderr, "fleetsim:", err)
		os.Exit(1)
	}
}

// fleet is what the flags ask for.
type fleet struct {
	sizes                 string
	perCollector, cliMacs int
	rate                  float64
	duration              time.Duration
}

func run(f fleet, vl string) error {
	tmp, err := os.MkdirTemp("", "fleetsim-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	collector := filepath.Join(tmp, "otelcol")
	if out, err := exec.Command("go", "build", "-o", collector, "./collector").CombinedOutput(); err != nil {
		return fmt.Errorf("build the collector (run from e2e/otelcol): %v\n%s", err, out)
	}
	if vl == "" {
		vl = filepath.Join(tmp, "victoria-logs")
		cmd := exec.Command("go", "install", "github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs@v1.52.1")
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go install VictoriaLogs: %v\n%s", err, out)
		}
	}
	config, err := filepath.Abs(filepath.Join("..", "..", "deploy", "shipping", "otelcol", "config.yaml"))
	if err != nil {
		return err
	}
	var results []result
	for _, size := range strings.Split(f.sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(size))
		if err != nil || n < 1 {
			return fmt.Errorf("-macs: %q is not a positive number", size)
		}
		r, err := simulate(filepath.Join(tmp, "fleet-"+size), n, f, collector, vl, config)
		if err != nil {
			return fmt.Errorf("%d Macs: %w", n, err)
		}
		results = append(results, r)
	}
	for _, r := range results {
		r.print()
	}
	return nil
}

// result is one fleet's run.
type result struct {
	macs, collectors           int
	written, stored, dupes     int
	perCollector               float64 // records/s one collector shipped, over the run
	delayP50, delayP99, settle time.Duration
	answers                    []answer
}

type answer struct {
	question, got string
	right         bool
}

func (r result) print() {
	fmt.Printf("\n%d Macs, %d collectors: %d records written, %d in the store (lost %d, duplicates %d)\n",
		r.macs, r.collectors, r.written, r.stored, r.written-r.stored, r.dupes)
	fmt.Printf("  %.0f records/s per collector; end-to-end delay p50 %v, p99 %v; last record stored %v after the writers stopped\n",
		r.perCollector, r.delayP50.Round(time.Millisecond), r.delayP99.Round(time.Millisecond), r.settle.Round(time.Millisecond))
	for _, a := range r.answers {
		mark := "right"
		if !a.right {
			mark = "WRONG"
		}
		fmt.Printf("  %-58s %s (%s)\n", a.question, a.got, mark)
	}
}

// truth is what the fleet wrote, to check the store's answers against.
type truth struct {
	mu          sync.Mutex
	written     int
	deniedBy    map[string]bool // hosts that denied the rule asked about
	quarantined map[string]bool // host/session
	versions    map[string]bool
	unhealthy   map[string]bool // hosts that sent a heartbeat with healthy false
	joined      map[string]bool // host/tool_use_id cli-decision/coworkbridge-decision, where both were sent
}

const askedRule = "bash.git-push-force"

// mac is one simulated Mac: its folder, and where its CLI's own events go ("" for a CLI that
// exports none, or exports from the VM).
type mac struct {
	i      int
	dir    string
	cliURL string
}

func simulate(dir string, n int, f fleet, collectorBin, vlBin, config string) (result, error) {
	r := result{macs: n}
	port, err := freePort()
	if err != nil {
		return r, err
	}
	store := fmt.Sprintf("http://127.0.0.1:%d", port)
	vl := exec.Command(vlBin, "-storageDataPath="+filepath.Join(dir, "vl"), fmt.Sprintf("-httpListenAddr=127.0.0.1:%d", port), "-retentionPeriod=2d")
	vl.Stdout, vl.Stderr = io.Discard, io.Discard
	if err := vl.Start(); err != nil {
		return r, err
	}
	defer stop(vl)
	if err := waitHTTP(store + "/health"); err != nil {
		return r, err
	}
	metricsOff := filepath.Join(dir, "metrics-off.yaml")
	if err := os.WriteFile(metricsOff, []byte("service:\n  telemetry:\n    metrics:\n      level: none\n"), 0o600); err != nil {
		return r, err
	}
	var cols []*exec.Cmd
	defer func() {
		for _, c := range cols {
			stop(c)
		}
	}()
	start := func(logs, storage string, env ...string) error {
		// Many collectors on one machine: their own metrics endpoints (one port each) are off,
		// by a second configuration merged over the shipped one.
		c := exec.Command(collectorBin, "--config", config, "--config", metricsOff)
		c.Env = append(os.Environ(), "COWORKBRIDGE_LOGS="+logs, "OTELCOL_STORAGE="+storage, "OTLP_ENDPOINT="+store+"/insert/opentelemetry")
		c.Env = append(c.Env, env...)
		c.Stdout, c.Stderr = io.Discard, io.Discard
		if err := c.Start(); err != nil {
			return err
		}
		cols = append(cols, c)
		return nil
	}
	// The Macs: the last cliMacs each with a collector of their own, which also takes their
	// CLI's events (the shape deploy/shipping's README describes: an agent per Mac); the rest in
	// groups, one collector per group.
	solo := max(n-min(f.cliMacs, n), 0)
	var macs []mac
	for g := 0; g*f.perCollector < solo; g++ {
		group := filepath.Join(dir, fmt.Sprintf("group-%03d", g))
		for i := g * f.perCollector; i < min(solo, (g+1)*f.perCollector); i++ {
			macs = append(macs, mac{i: i, dir: filepath.Join(group, fmt.Sprintf("mac-%03d", i))})
		}
		if err := start(filepath.Join(group, "*"), filepath.Join(dir, fmt.Sprintf("storage-%03d", g)), "CLAUDE_CODE_OTLP_LISTEN=127.0.0.1:0", "COWORKBRIDGE_HOST=gateway"); err != nil {
			return r, err
		}
	}
	for i := solo; i < n; i++ {
		m := mac{i: i, dir: filepath.Join(dir, fmt.Sprintf("solo-%03d", i), fmt.Sprintf("mac-%03d", i))}
		cliPort, err := freePort()
		if err != nil {
			return r, err
		}
		m.cliURL = fmt.Sprintf("http://127.0.0.1:%d/v1/logs", cliPort)
		if err := start(m.dir, filepath.Join(dir, fmt.Sprintf("storage-solo-%03d", i)),
			fmt.Sprintf("CLAUDE_CODE_OTLP_LISTEN=127.0.0.1:%d", cliPort), fmt.Sprintf("COWORKBRIDGE_HOST=mac-%03d", i)); err != nil {
			return r, err
		}
		if err := waitListen(fmt.Sprintf("127.0.0.1:%d", cliPort)); err != nil {
			return r, fmt.Errorf("the collector of mac-%03d takes no CLI events: %w", i, err)
		}
		macs = append(macs, m)
	}
	for _, m := range macs {
		if err := os.MkdirAll(m.dir, 0o700); err != nil {
			return r, err
		}
	}
	r.collectors = len(cols)
	tr := &truth{deniedBy: map[string]bool{}, quarantined: map[string]bool{}, versions: map[string]bool{},
		unhealthy: map[string]bool{}, joined: map[string]bool{}}
	ctx, cancel := context.WithTimeout(context.Background(), f.duration)
	defer cancel()
	started := time.Now()
	var wg sync.WaitGroup
	for _, m := range macs {
		wg.Go(func() { writeMac(ctx, m, f.rate, tr) })
		wg.Go(func() { heartbeats(ctx, m, tr) })
	}
	delays := make(chan []time.Duration, 1)
	go func() { delays <- probeDelays(ctx, macs[0].dir, store) }()
	wg.Wait()
	stopped := time.Now()
	r.written = tr.written
	// Wait for the store to hold every record (or give up after a minute: that is loss).
	deadline := stopped.Add(time.Minute)
	for {
		total, unique, err := counts(store)
		if err == nil && unique >= r.written {
			r.stored, r.dupes = unique, total-unique
			break
		}
		if time.Now().After(deadline) {
			r.stored, r.dupes = unique, total-unique
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	r.settle = time.Since(stopped)
	r.perCollector = float64(r.stored) / time.Since(started).Seconds() / float64(len(cols))
	ds := <-delays
	slices.Sort(ds)
	if len(ds) > 0 {
		r.delayP50, r.delayP99 = ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)]
	}
	r.answers = ask(store, tr)
	return r, nil
}

// writeMac writes one Mac's decision log at about rate records a second until ctx ends, and,
// where the Mac's CLI exports its own events, the CLI's tool_decision for each call.
func writeMac(ctx context.Context, m mac, rate float64, tr *truth) {
	i := m.i
	host := fmt.Sprintf("mac-%03d", i)
	version := []string{"2.1.329", "2.1.332"}[i%2]
	log := telemetry.Open(telemetry.Options{Path: filepath.Join(m.dir, "decisions.jsonl"), MaxFileBytes: 256 << 10, MaxFiles: 5,
		Redact: true, Stamp: telemetry.Stamp{Host: host, User: fmt.Sprintf("user%03d", i), Version: "1.0.0", ConfigOrigin: "file"}})
	defer log.Close()
	rng := rand.New(rand.NewPCG(uint64(i), 54))
	for n := 0; ; n++ {
		wait := time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		session := fmt.Sprintf("local_%03d_%d", i, n/200)
		rec := telemetry.Record{TS: time.Now(), RID: fmt.Sprintf("%08x%024x", i, n), Session: session, Agent: "claude-code",
			Transport: "host-socket", Mode: "enforce", Enforced: true, Tool: "Bash", Decision: claudehook.Allow,
			Input: json.RawMessage(`{"command":"ls"}`), ToolUseID: fmt.Sprintf("toolu_%d_%d", i, n), CLISessionID: session, CLIVersion: version}
		switch {
		case i%7 == 3 && n%40 == 5: // some Macs push with force now and then
			rec.Decision, rec.Rule = claudehook.Deny, askedRule
		case i%11 == 4 && n == 30: // a few sessions are quarantined once
			rec.Decision, rec.Rule, rec.Tool = claudehook.Deny, "coworkbridge.quarantine", "Write"
		case n%25 == 0:
			rec.Decision, rec.Rule = claudehook.Ask, "read.search-disk"
		}
		if err := log.Write(rec); err != nil {
			fmt.Fprintln(os.Stderr, "write:", err)
			continue
		}
		cliDecision := ""
		if m.cliURL != "" && rec.Decision != claudehook.Ask { // an ask's tool_decision comes from the user, later
			cliDecision = map[claudehook.Decision]string{claudehook.Allow: "accept", claudehook.Deny: "reject"}[rec.Decision]
			if err := exportToolDecision(m.cliURL, version, rec, cliDecision); err != nil {
				fmt.Fprintln(os.Stderr, "the CLI's export:", err)
				cliDecision = ""
			}
		}
		tr.mu.Lock()
		tr.written++
		tr.versions[version] = true
		switch rec.Rule {
		case askedRule:
			tr.deniedBy[host] = true
		case "coworkbridge.quarantine":
			tr.quarantined[host+"/"+session] = true
		}
		if cliDecision != "" {
			tr.joined[host+"/"+rec.ToolUseID+" "+cliDecision+"/"+string(rec.Decision)] = true
		}
		tr.mu.Unlock()
	}
}

// exportToolDecision sends the CLI's own tool_decision event for the call, as Claude Code
// 2.1.332 exports it over OTLP/HTTP JSON (e2e/otelcol/testdata/claude-code-logs.json): its
// resource names the CLI and its version, and no host.
func exportToolDecision(url, version string, rec telemetry.Record, decision string) error {
	str := func(k, v string) map[string]any {
		return map[string]any{"key": k, "value": map[string]any{"stringValue": v}}
	}
	source := map[string]string{"accept": "config", "reject": "hook"}[decision]
	body, err := json.Marshal(map[string]any{"resourceLogs": []any{map[string]any{
		"resource": map[string]any{"attributes": []any{str("service.name", "claude-code"), str("service.version", version), str("os.type", "darwin")}},
		"scopeLogs": []any{map[string]any{"scope": map[string]any{"name": "com.anthropic.claude_code.events", "version": version},
			"logRecords": []any{map[string]any{
				"timeUnixNano": strconv.FormatInt(rec.TS.UnixNano(), 10),
				"body":         map[string]any{"stringValue": "claude_code.tool_decision"},
				"attributes": []any{str("event.name", "tool_decision"), str("session.id", rec.CLISessionID), str("tool_name", rec.Tool),
					str("tool_use_id", rec.ToolUseID), str("decision", decision), str("source", source)},
			}}}}}}})
	if err != nil {
		return err
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// heartbeats writes the Mac's daemon log: a heartbeat a second, as the daemon's health reporter
// logs it, unhealthy on some Macs.
func heartbeats(ctx context.Context, m mac, tr *truth) {
	f, err := os.OpenFile(filepath.Join(m.dir, "daemon.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "daemon log:", err)
		return
	}
	defer f.Close()
	host := fmt.Sprintf("mac-%03d", m.i)
	log := slog.New(slog.NewJSONHandler(f, nil)).With("component", "health", "host", host, "user", fmt.Sprintf("user%03d", m.i))
	sick := m.i%9 == 2 // a session its hook does not reach
	if sick {
		tr.mu.Lock()
		tr.unhealthy[host] = true
		tr.mu.Unlock()
	}
	for {
		hooked, warnings := 3, 0
		if sick {
			hooked, warnings = 2, 1
		}
		log.Info("heartbeat", "healthy", !sick, "warnings", warnings, "mode", "enforce", "sessions_live", 3, "sessions_hooked", hooked)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// probeDelays measures end-to-end delay: every second it writes a marked record into a Mac's
// folder of its own (so the fleet's count is unchanged) and times how long the store takes to
// return it.
func probeDelays(ctx context.Context, macDir, store string) []time.Duration {
	dir := filepath.Join(filepath.Dir(macDir), "probe")
	os.MkdirAll(dir, 0o700)
	log := telemetry.Open(telemetry.Options{Path: filepath.Join(dir, "decisions.jsonl"), Stamp: telemetry.Stamp{Host: "probe"}})
	defer log.Close()
	var out []time.Duration
	for i := 0; ctx.Err() == nil; i++ {
		rid := fmt.Sprintf("%032x", 0xfeed0000+i)
		written := time.Now()
		log.Write(telemetry.Record{TS: written, RID: rid, Session: "probe", Tool: "Probe", Decision: claudehook.Allow, Input: json.RawMessage("null")})
		for time.Since(written) < 30*time.Second {
			if n, err := query(store, fmt.Sprintf(`coworkbridge.rid:=%q | stats count() n`, rid)); err == nil && n > 0 {
				out = append(out, time.Since(written))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return out
}

// counts is how many fleet records the store holds, and how many distinct ones (by host and rid).
func counts(store string) (total, unique int, err error) {
	if total, err = query(store, `event.name:="coworkbridge.decision" -host.name:=probe | stats count() n`); err != nil {
		return 0, 0, err
	}
	unique, err = query(store, `event.name:="coworkbridge.decision" -host.name:=probe | stats count_uniq(host.name, coworkbridge.rid) n`)
	return total, unique, err
}

// The security team's questions, as deploy/shipping/README.md writes them (a test holds the two
// together).
const (
	deniedQuery      = `_time:1d coworkbridge.rule:="` + askedRule + `" coworkbridge.decision:=deny | uniq by (host.name)`
	quarantinedQuery = `_time:1d coworkbridge.rule:="coworkbridge.quarantine" | uniq by (host.name, coworkbridge.session)`
	versionsQuery    = `_time:1d event.name:="coworkbridge.decision" | uniq by (app.version)`
	unhealthyQuery   = `_time:1h event.name:="coworkbridge.heartbeat" coworkbridge.healthy:=false | uniq by (host.name)`
	// Per Mac and call, Claude Code's own tool_decision beside coworkbridge's record of the same
	// tool_use_id (calls with both only).
	joinQuery = `_time:1d tool_use_id:* (event.name:="tool_decision" or event.name:="coworkbridge.decision")` +
		` | stats by (host.name, tool_use_id) count_uniq(event.name) sides, max(decision) cli, max(coworkbridge.decision) coworkbridge` +
		` | filter sides:=2`
)

// ask puts the security team's questions to the store.
func ask(store string, tr *truth) []answer {
	hosts, err1 := values(store, deniedQuery, "host.name")
	quarantined, err2 := pairs(store, quarantinedQuery, "host.name", "coworkbridge.session")
	// The probe's records name no CLI version; the README's query, on a real fleet, has none.
	versions, err3 := values(store, strings.Replace(versionsQuery, " | ", " -host.name:=probe | ", 1), "app.version")
	sick, err4 := values(store, unhealthyQuery, "host.name")
	joined, err5 := beside(store)
	return []answer{
		{"which hosts denied " + askedRule + " today", describe(hosts, err1), err1 == nil && same(hosts, tr.deniedBy)},
		{"which sessions were quarantined", describe(quarantined, err2), err2 == nil && same(quarantined, tr.quarantined)},
		{"which Claude Code versions are out there", describe(versions, err3), err3 == nil && same(versions, tr.versions)},
		{"Macs whose guard is not healthy", describe(sick, err4), err4 == nil && same(sick, tr.unhealthy)},
		{"each call's CLI decision beside coworkbridge's, per Mac", describe(joined, err5), err5 == nil && same(joined, tr.joined)},
	}
}

func beside(store string) ([]string, error) {
	rs, err := rows(store, joinQuery)
	var out []string
	for _, r := range rs {
		out = append(out, r["host.name"]+"/"+r["tool_use_id"]+" "+r["cli"]+"/"+r["coworkbridge"])
	}
	slices.Sort(out)
	return out, err
}

func describe(v []string, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	if len(v) > 4 {
		return fmt.Sprintf("%d: %s, ...", len(v), strings.Join(v[:4], ", "))
	}
	return fmt.Sprintf("%d: %s", len(v), strings.Join(v, ", "))
}

func same(got []string, want map[string]bool) bool {
	if len(got) != len(want) {
		return false
	}
	for _, g := range got {
		if !want[g] {
			return false
		}
	}
	return true
}

// query runs a LogsQL query ending in `stats ... n` and returns n.
func query(store, q string) (int, error) {
	rows, err := rows(store, q)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	return strconv.Atoi(rows[0]["n"])
}

func values(store, q, field string) ([]string, error) {
	rs, err := rows(store, q)
	var out []string
	for _, r := range rs {
		out = append(out, r[field])
	}
	slices.Sort(out)
	return out, err
}

func pairs(store, q, a, b string) ([]string, error) {
	rs, err := rows(store, q)
	var out []string
	for _, r := range rs {
		out = append(out, r[a]+"/"+r[b])
	}
	slices.Sort(out)
	return out, err
}

// rows runs a LogsQL query and returns its result rows (one JSON object per line).
func rows(store, q string) ([]map[string]string, error) {
	resp, err := http.PostForm(store+"/select/logsql/query", url.Values{"query": {q}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("query %q: %s: %s", q, resp.Status, strings.TrimSpace(string(data)))
	}
	var out []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]string
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			return nil, fmt.Errorf("query %q: %w", q, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitHTTP(u string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer", u)
}

func waitListen(addr string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func stop(c *exec.Cmd) {
	c.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		c.Process.Kill()
		<-done
	}
}
