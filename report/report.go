// Package report turns decision logs into the evidence a rollout needs: what each rule, tool,
// host, session and day would have denied or asked in observe mode, and did in enforce; the
// noisiest rules; the Macs with nothing a rule would have denied; and the tuning the records
// suggest. It reads logs as streams, in bounded memory, from one Mac or many concatenated (a
// SIEM export), and renders a terminal table, JSON or one self-contained HTML page.
//
// It reads records only; it never judges a call again (that is check --replay) and never
// writes anywhere but the writer it is given.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// Limits that keep memory bounded whatever the logs hold.
const (
	// MaxLine is the longest record read; longer lines are counted as invalid and skipped.
	MaxLine = 16 << 20
	// dedupWindow is how many recent request ids are remembered to drop a record seen twice
	// (a shipper's retry, overlapping exports).
	dedupWindow = 1 << 18
	// maxKeys bounds each breakdown; what comes after falls into "(other)".
	maxKeys = 20000
)

// Other is the key of what a full breakdown could not name.
const Other = "(other)"

// Counts are the verdicts of a group of records. Would* are observe mode's (or a rule in
// observe): what would have been denied or asked. Deny and Ask were applied.
type Counts struct {
	Records   int64 `json:"records"`
	Allow     int64 `json:"allow"`
	Ask       int64 `json:"ask"`
	Deny      int64 `json:"deny"`
	WouldAsk  int64 `json:"would_ask"`
	WouldDeny int64 `json:"would_deny"`
}

// Objections are the denies and asks, applied or not.
func (c *Counts) Objections() int64 { return c.Ask + c.Deny + c.WouldAsk + c.WouldDeny }

// Report is what the logs say. Build it with New and Add, then Finish.
type Report struct {
	Files      []string  `json:"files"`
	Records    int64     `json:"records"`
	Invalid    int64     `json:"invalid_lines"`
	Duplicates int64     `json:"duplicates"`
	First      time.Time `json:"first,omitzero"`
	Last       time.Time `json:"last,omitzero"`
	Totals     Counts    `json:"totals"`

	Modes    map[string]int64   `json:"modes"`
	Rules    map[string]*Counts `json:"rules"`
	Tools    map[string]*Counts `json:"tools"`
	Hosts    map[string]*Counts `json:"hosts"`
	Sessions map[string]*Counts `json:"sessions"`
	Days     map[string]*Counts `json:"days"`
	// Programs are the programs the unknown-executable rule asked about, by how often.
	Programs map[string]int64 `json:"unknown_programs"`
	// ModeChanges are the moments a host's records changed mode (observe to enforce and back),
	// in the order read: at most MaxModeChanges.
	ModeChanges []ModeChange `json:"mode_changes,omitempty"`

	// Integrity is what each log's hash chain says (none for stdin).
	Integrity []Integrity `json:"integrity"`

	// Objections are the denies and asks themselves, newest last, for a security team to read
	// one by one: at most MaxObjections (the newest), ObjectionsDropped counts the rest.
	Objections        []Objection `json:"objections"`
	ObjectionsDropped int64       `json:"objections_dropped,omitempty"`

	// Flows are the calls a flow rule matched (a send after the session took in untrusted
	// content and read private data), each with the calls of its flow: at most MaxFlows, the
	// newest; FlowsDropped counts the rest.
	Flows        []Flow `json:"flows"`
	FlowsDropped int64  `json:"flows_dropped,omitempty"`

	// Replay is a candidate policy's verdicts on the same records, when the caller judged them
	// again (see OnRecord).
	Replay *Replay `json:"replay,omitempty"`
	// OnRecord, when set, is given every record the report counts (duplicates are not), as read.
	OnRecord func(line []byte) `json:"-"`

	// Derived by Finish.
	ReadyHosts []string     `json:"hosts_ready_for_enforce"`
	Suggest    []Suggestion `json:"suggestions"`

	seen   map[uint64]struct{}
	ring   []uint64
	ringAt int
	objAt  int // where the ring of Objections writes next, once it is full
	// ruleHosts are the hosts where each rule objected, and programHosts those where each
	// unknown program was asked about, up to maxRuleHosts each.
	ruleHosts, programHosts map[string]map[string]struct{}
	// hostMode is each host's mode in its last record.
	hostMode map[string]string
}

// ModeChange is a host's records passing from one mode to another.
type ModeChange struct {
	TS       time.Time `json:"ts"`
	Host     string    `json:"host"`
	From, To string
}

// MaxModeChanges bounds the mode changes a report keeps.
const MaxModeChanges = 200

// addHost notes host in the set for key, within the bounds.
func addHost(sets map[string]map[string]struct{}, key, host string) {
	hs := sets[key]
	if hs == nil && len(sets) < maxKeys {
		hs = map[string]struct{}{}
		sets[key] = hs
	}
	if hs != nil && len(hs) < maxRuleHosts {
		hs[host] = struct{}{}
	}
}

// maxRuleHosts bounds the hosts remembered per rule; a count at the bound means "at least".
const maxRuleHosts = 10000

// MaxObjections bounds the objections kept whole (the last ones read); maxObjectionInput bounds each one's input as
// shown (the log keeps it whole).
const (
	MaxObjections     = 5000
	maxObjectionInput = 2048
)

// Objection is one deny or ask (applied, or only observed) as the report lists it. Its input is
// as the log holds it: redacted when telemetry.redact is on.
type Objection struct {
	TS       time.Time           `json:"ts"`
	Host     string              `json:"host"`
	User     string              `json:"user,omitempty"`
	Session  string              `json:"session"`
	Tool     string              `json:"tool"`
	Rule     string              `json:"rule"`
	Decision claudehook.Decision `json:"decision"`
	Enforced bool                `json:"enforced"`
	Reason   string              `json:"reason,omitempty"`
	Input    string              `json:"input"`
	Effects  []string            `json:"effects,omitempty"`
}

// Verdict is the objection's verdict as the tables name it: denied, would deny, asked, would ask.
func (o Objection) Verdict() string {
	switch {
	case o.Decision == claudehook.Deny && o.Enforced:
		return "denied"
	case o.Decision == claudehook.Deny:
		return "would deny"
	case o.Enforced:
		return "asked"
	}
	return "would ask"
}

// Suggestion is one change the records argue for.
type Suggestion struct {
	Kind   string `json:"kind"` // allow_executable | rule_observe | review_denies
	Name   string `json:"name"`
	Count  int64  `json:"count"`
	Hosts  int    `json:"hosts,omitempty"`
	Reason string `json:"reason"`
}

// New starts an empty report.
func New() *Report {
	return &Report{Modes: map[string]int64{}, Rules: map[string]*Counts{}, Tools: map[string]*Counts{},
		Hosts: map[string]*Counts{}, Sessions: map[string]*Counts{}, Days: map[string]*Counts{}, Programs: map[string]int64{},
		seen: map[uint64]struct{}{}, ring: make([]uint64, dedupWindow), ruleHosts: map[string]map[string]struct{}{},
		programHosts: map[string]map[string]struct{}{}, hostMode: map[string]string{}}
}

// record is the part of a decision-log record the report reads.
type record struct {
	TS       time.Time           `json:"ts"`
	RID      string              `json:"rid"`
	Session  string              `json:"session"`
	Mode     string              `json:"mode"`
	Enforced bool                `json:"enforced"`
	Tool     string              `json:"tool"`
	Decision claudehook.Decision `json:"decision"`
	Rule     string              `json:"rule"`
	Reason   string              `json:"reason"`
	Host     string              `json:"host"`
	User     string              `json:"user"`
	Input    json.RawMessage     `json:"input"`
	Effects  []string            `json:"effects"`
	Flow     []string            `json:"flow"`
}

// MaxFlows bounds the flows a report keeps.
const MaxFlows = 200

// Flow is one call a flow rule matched, with the calls before it that made the flow.
type Flow struct {
	TS       time.Time `json:"ts"`
	Host     string    `json:"host"`
	User     string    `json:"user,omitempty"`
	Session  string    `json:"session"`
	Tool     string    `json:"tool"`
	Rule     string    `json:"rule"`
	Decision string    `json:"decision"`
	Enforced bool      `json:"enforced"`
	Calls    []string  `json:"calls"`
}

// Add reads one log (or a concatenation of many) line by line.
func (rp *Report) Add(name string, r io.Reader) error {
	rp.Files = append(rp.Files, name)
	for line, err := range telemetry.Lines(r, MaxLine) {
		switch {
		case errors.Is(err, telemetry.ErrLineTooLong):
			rp.Invalid++
		case err != nil:
			return fmt.Errorf("%s: %w", name, err)
		default:
			rp.addLine(line)
		}
	}
	return nil
}

func (rp *Report) addLine(line []byte) {
	var r record
	if err := json.Unmarshal(line, &r); err != nil || r.Decision == "" {
		rp.Invalid++
		return
	}
	if r.RID != "" && rp.duplicate(r.Host+"/"+r.RID) {
		rp.Duplicates++
		return
	}
	rp.Records++
	if rp.OnRecord != nil {
		rp.OnRecord(line)
	}
	if !r.TS.IsZero() {
		if rp.First.IsZero() || r.TS.Before(rp.First) {
			rp.First = r.TS
		}
		if r.TS.After(rp.Last) {
			rp.Last = r.TS
		}
	}
	host := r.Host
	if host == "" {
		host = "(unnamed)"
	}
	rp.Modes[r.Mode]++
	if was, ok := rp.hostMode[host]; ok && was != r.Mode && r.Mode != "" && len(rp.ModeChanges) < MaxModeChanges {
		rp.ModeChanges = append(rp.ModeChanges, ModeChange{TS: r.TS, Host: host, From: was, To: r.Mode})
	}
	if r.Mode != "" && (len(rp.hostMode) < maxKeys || rp.hostMode[host] != "") {
		rp.hostMode[host] = r.Mode
	}
	day := r.TS.UTC().Format("2006-01-02")
	for _, c := range []*Counts{&rp.Totals, group(rp.Rules, ruleKey(r.Rule)), group(rp.Tools, r.Tool), group(rp.Hosts, host),
		group(rp.Sessions, host+"/"+r.Session), group(rp.Days, day)} {
		c.count(r)
	}
	if r.Decision != claudehook.Allow && r.Rule != "" {
		addHost(rp.ruleHosts, r.Rule, host)
	}
	if r.Decision == claudehook.Deny || r.Decision == claudehook.Ask {
		rp.keepObjection(r, host)
	}
	if len(r.Flow) > 0 {
		if len(rp.Flows) == MaxFlows {
			rp.Flows, rp.FlowsDropped = rp.Flows[1:], rp.FlowsDropped+1
		}
		rp.Flows = append(rp.Flows, Flow{TS: r.TS, Host: host, User: r.User, Session: r.Session, Tool: r.Tool, Rule: r.Rule,
			Decision: string(r.Decision), Enforced: r.Enforced, Calls: r.Flow})
	}
	if r.Rule == "bash.unknown-executable" {
		if m := quoted.FindStringSubmatch(r.Reason); m != nil {
			k := m[1]
			if _, ok := rp.Programs[k]; !ok && len(rp.Programs) >= maxKeys {
				k = Other
			}
			rp.Programs[k]++
			addHost(rp.programHosts, k, host)
		}
	}
}

func (rp *Report) keepObjection(r record, host string) {
	in := string(r.Input)
	if len(in) > maxObjectionInput {
		in = in[:maxObjectionInput] + fmt.Sprintf("…[%d more bytes in the log]", len(in)-maxObjectionInput)
	}
	o := Objection{TS: r.TS, Host: host, User: r.User, Session: r.Session, Tool: r.Tool, Rule: r.Rule, Decision: r.Decision,
		Enforced: r.Enforced, Reason: r.Reason, Input: in, Effects: r.Effects}
	if len(rp.Objections) < MaxObjections {
		rp.Objections = append(rp.Objections, o)
		return
	}
	// A ring of the last ones read: Finish puts them back in order.
	rp.Objections[rp.objAt] = o
	rp.objAt = (rp.objAt + 1) % MaxObjections
	rp.ObjectionsDropped++
}

// quoted is the program an unknown-executable reason names: `... command "terraform"`.
var quoted = lazyregexp.New(`"([^"\s]{1,64})"`)

func ruleKey(rule string) string {
	if rule == "" {
		return "(no rule)"
	}
	return rule
}

func group(m map[string]*Counts, key string) *Counts {
	if c, ok := m[key]; ok {
		return c
	}
	if len(m) >= maxKeys {
		key = Other
		if c, ok := m[key]; ok {
			return c
		}
	}
	c := &Counts{}
	m[key] = c
	return c
}

func (c *Counts) count(r record) {
	c.Records++
	switch {
	case r.Decision == claudehook.Deny && r.Enforced:
		c.Deny++
	case r.Decision == claudehook.Deny:
		c.WouldDeny++
	case r.Decision == claudehook.Ask && r.Enforced:
		c.Ask++
	case r.Decision == claudehook.Ask:
		c.WouldAsk++
	default:
		c.Allow++
	}
}

// duplicate reports a request id already seen within the window, and remembers it.
func (rp *Report) duplicate(id string) bool {
	h := fnv.New64a()
	h.Write([]byte(id))
	k := h.Sum64()
	if _, ok := rp.seen[k]; ok {
		return true
	}
	if old := rp.ring[rp.ringAt]; old != 0 {
		delete(rp.seen, old)
	}
	rp.ring[rp.ringAt] = k
	rp.ringAt = (rp.ringAt + 1) % len(rp.ring)
	rp.seen[k] = struct{}{}
	return false
}

// minSuggestEvents is how often something must happen before the report suggests a change for
// it: one event is an anecdote, and a policy tuned to anecdotes drifts.
const minSuggestEvents = 5

// Finish derives the hosts ready for enforce and the suggestions.
func (rp *Report) Finish() {
	if rp.objAt > 0 {
		rp.Objections = slices.Concat(rp.Objections[rp.objAt:], rp.Objections[:rp.objAt])
		rp.objAt = 0
	}
	sort.SliceStable(rp.Objections, func(i, j int) bool { return rp.Objections[i].TS.Before(rp.Objections[j].TS) })
	rp.ReadyHosts = nil
	for host, c := range rp.Hosts {
		if host != Other && c.Records > 0 && c.WouldDeny == 0 && c.Deny == 0 {
			rp.ReadyHosts = append(rp.ReadyHosts, host)
		}
	}
	sort.Strings(rp.ReadyHosts)
	rp.Suggest = nil
	for _, kv := range Top(rp.Programs, 10) {
		if kv.Value >= minSuggestEvents {
			rp.Suggest = append(rp.Suggest, Suggestion{Kind: "allow_executable", Name: kv.Key, Count: kv.Value, Hosts: len(rp.programHosts[kv.Key]),
				Reason: fmt.Sprintf("asked about %d times as an unknown program; if it is part of your users' work, add it to policy.allowed_executables", kv.Value)})
		}
	}
	for _, kv := range topCounts(rp.Rules, 10) {
		c := rp.Rules[kv.Key]
		wouldBe := c.WouldAsk + c.WouldDeny
		if kv.Key == "(no rule)" || kv.Key == "bash.unknown-executable" || wouldBe < minSuggestEvents || wouldBe*1000 < rp.Totals.Records {
			continue // a handful of events, or under 0.1% of all calls: not a pattern
		}
		s := Suggestion{Kind: "rule_observe", Name: kv.Key, Count: wouldBe, Hosts: len(rp.ruleHosts[kv.Key]),
			Reason: "a noisy ask: review its records; if they are ordinary work, keep it in observe (policy.rule_modes) while the rest enforces"}
		if c.WouldDeny > c.WouldAsk {
			s.Kind, s.Reason = "review_denies", "would deny this often: read these records before enforcing; each is an attack blocked or a false deny to tune away"
		}
		rp.Suggest = append(rp.Suggest, s)
	}
}

// KV is a key and its count, for sorted output.
type KV struct {
	Key   string
	Value int64
}

// Top returns the n largest counts, largest first, ties by key.
func Top(m map[string]int64, n int) []KV {
	out := make([]KV, 0, len(m))
	for k, v := range m {
		out = append(out, KV{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Value != out[j].Value {
			return out[i].Value > out[j].Value
		}
		return out[i].Key < out[j].Key
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// topCounts returns the n groups with the most objections.
func topCounts(m map[string]*Counts, n int) []KV {
	return Top(objectionsOf(m), n)
}

func objectionsOf(m map[string]*Counts) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, c := range m {
		out[k] = c.Objections()
	}
	return out
}

// Integrity is what the hash chain of one log says.
type Integrity struct {
	Log string `json:"log"`
	telemetry.Verification
}

// Summary says in a line whether the chain holds, and if not where it breaks.
func (in Integrity) Summary() string {
	switch {
	case in.Broken != nil:
		return fmt.Sprintf("%s: CHAIN BROKEN at %s", in.Log, in.Broken)
	case len(in.MissingHeads) > 0:
		return fmt.Sprintf("%s: the chain does not hold the published head %s: records from there on were rewritten or cut", in.Log, in.MissingHeads[0])
	}
	s := fmt.Sprintf("%s: chain whole, %d record%s", in.Log, in.Records, map[bool]string{true: "", false: "s"}[in.Records == 1])
	if in.Unchained > 0 {
		s += fmt.Sprintf(" (and %d from before the chain)", in.Unchained)
	}
	if in.Head != "" {
		s += ", head " + in.Head
	}
	return s
}

// Verify checks the hash chain through files (one log, oldest first) and keeps what it found;
// heads are chain heads published earlier, which the chain must hold.
func (rp *Report) Verify(log string, files []string, heads ...string) error {
	v, err := telemetry.Verify(files, heads...)
	if err != nil {
		return err
	}
	rp.Integrity = append(rp.Integrity, Integrity{Log: log, Verification: v})
	return nil
}

// Whole reports whether every chain verified holds, published heads included.
func (rp *Report) Whole() bool {
	for _, in := range rp.Integrity {
		if in.Broken != nil || len(in.MissingHeads) > 0 {
			return false
		}
	}
	return true
}
