package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/corpus"
	"github.com/coworkbridge/coworkbridge/installer"
	"github.com/coworkbridge/coworkbridge/internal/runfile"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
	"github.com/coworkbridge/coworkbridge/session"
)

func cmdCheck(ctx context.Context, args []string, sio stdio) int {
	fs := newFlags("check", "[--bash CMD | --write PATH | PAYLOAD.json | - | --corpus FILE.jsonl... | --replay LOG [--config CANDIDATE]] [--json]",
		"Classifies one tool call with the policy in force (managed.json's, or the last good copy the daemon\n"+
			"runs on), or reads a PreToolUse payload from a file or stdin ('-'), or scores the policy on labelled\n"+
			"corpora, or judges every call of a decision log again under a candidate managed.json and shows\n"+
			"what would change. An invalid managed.json with no good copy is an error, never a silent fallback\n"+
			"to the built-in rules. Exit status 0 whatever the verdict (with --settings, 2 when something would\n"+
			"be held); 1 on error; 64 usage.", sio)
	bash := fs.String("bash", "", "classify this shell command")
	write := fs.String("write", "", "classify a Write to this path")
	cwd := fs.String("cwd", "/home/user/project", "working folder for --bash and --write")
	asJSON := fs.Bool("json", false, "print one JSON object: decision, rule, reason, matched")
	var corpora multiFlag
	fs.Var(&corpora, "corpus", "score a labelled corpus (JSON lines: tool, command, expect); repeatable")
	misses := fs.Bool("show-misses", false, "with --corpus, list the rows whose verdict disagrees")
	asks := fs.Bool("show-asks", false, "with --corpus, list the allow rows asked about, and how many each rule asked")
	settingsFile := fs.String("settings", "", "show what the allow-list holds of this settings file (as the daemon does in a session, and the lockdown ConfigChange hook)")
	replayLog := fs.String("replay", "", "judge every call of this decision log again and show what would change")
	candidate := fs.String("config", "", "with --replay: the candidate managed.json to judge with (default: the one in force)")
	from := fs.String("session", "", "judge the call as made from this Cowork session's folder (default: the session folder that holds --cwd, if any; none: a call from no session)")
	listPlaces := fs.Bool("places", false, "list the map of the Mac the file rules protect: coworkbridge's files, the sessions, the Claude app's and Claude Code's configuration")
	platform := fs.String("platform", "", "judge with the map of this platform (darwin, linux) instead of this machine's: a Mac's map previewed anywhere")
	home := fs.String("home", "", "judge with the map of a user whose home is this folder (default: yours; /Users/<you> with --platform darwin elsewhere)")
	system := fs.Bool("system", false, "judge with system mode's map (root's folders, every user's sessions): the default on a system-mode install; with --platform, a preview of one")
	if code, done := fs.parse(args); done {
		return code
	}
	machine, err := previewed(*platform, *home)
	if err != nil {
		return fs.usageError("%v", err)
	}
	if *system || *platform == "" && installer.SystemInstalled(runtime.GOOS) {
		// The map system mode's daemon judges with: its folders are root's, not the user's.
		machine.System, machine.Homes = true, managedconfig.UserHomes(machine.GOOS)
	}
	if *listPlaces {
		return checkPlaces(machine, *asJSON, sio)
	}
	if *candidate != "" && *replayLog == "" {
		return fs.usageError("--config names the candidate for --replay; give --replay LOG too")
	}
	if *settingsFile != "" {
		if *bash != "" || *write != "" || len(corpora) > 0 || *replayLog != "" || fs.NArg() > 0 {
			return fs.usageError("--settings cannot be combined with a call to classify, --corpus or --replay")
		}
		return checkSettings(*settingsFile, *asJSON, sio)
	}
	if *replayLog != "" {
		if *bash != "" || *write != "" || len(corpora) > 0 || fs.NArg() > 0 {
			return fs.usageError("--replay cannot be combined with a call to classify or --corpus")
		}
		return runReplay(ctx, *replayLog, *candidate, *asJSON, sio)
	}
	if fs.NArg() > 1 {
		return fs.usageError("check takes at most one payload file, got %d", fs.NArg())
	}
	if *bash == "" && *write == "" && len(corpora) == 0 && fs.NArg() == 0 && stdinIsTerminal(sio.in) {
		// Nothing to read but a person at a terminal: say what check wants instead of waiting.
		fs.printUsage(sio.err)
		return exitUsage
	}
	used, err := policyFor(machine, "")
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge check:", err)
		return exitFail
	}
	c := used.Classifier
	if used.Note != "" {
		fmt.Fprintln(sio.err, "coworkbridge check:", used.Note)
	}
	if len(corpora) > 0 {
		for _, f := range corpora {
			if err := scoreCorpus(ctx, c, f, corpusShow{misses: *misses, asks: *asks}, sio.out); err != nil {
				fmt.Fprintln(sio.err, "coworkbridge check:", err)
				return exitFail
			}
		}
		return exitOK
	}
	p, err := checkPayload(*bash, *write, *cwd, fs.Args(), sio.in)
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge check:", err)
		return exitFail
	}
	myHome, _ := os.UserHomeDir()
	v := judgement.Judge{Rules: c}.Decide(ctx, judgement.Call{Door: judgement.Offline, Payload: p,
		Own:  cmp.Or(*from, sessionHolding(used.Policy.Places, p.Cwd)),
		Read: runfile.Reader{Home: myHome}.Read, // the scripts a command runs, as they are here
	}).Verdict
	held := heldBack(ctx, used, p, v)
	shown := ""
	if v.Decision != claudehook.Allow {
		shown = used.Policy.Notices.Explain(v.HookReason(), managedconfig.NoticeFacts{Rule: v.RuleID, RID: "RID", Decision: string(v.Decision),
			Session: "SESSION", User: "USER", Host: "HOST"})
	}
	if *asJSON {
		json.NewEncoder(sio.out).Encode(map[string]any{"decision": string(v.Decision), "rule": v.RuleID, "reason": v.Reason, "matched": v.Matched,
			"effects": c.Effects(p), "config": used.Path, "config_origin": used.Origin, "config_hash": used.Hash, "held_back": held,
			"fingerprint": c.Fingerprint(), "shown": shown})
		return exitOK
	}
	fmt.Fprintf(sio.out, "decision: %s\n", v.Decision)
	if v.RuleID != "" {
		fmt.Fprintf(sio.out, "rule:     %s\nreason:   %s\nmatched:  %s\n", v.RuleID, v.Reason, v.Matched)
	}
	if v.Nudge != "" {
		fmt.Fprintf(sio.out, "nudge:    %s\n", v.Nudge)
	}
	switch {
	case v.Decision == claudehook.Allow:
	case v.ObserveOnly:
		fmt.Fprintln(sio.out, "mode:     observe (reported, not applied)")
	case used.Path == "":
		// No managed.json: the built-in rules, as the policy line below says.
	case !used.Enabled:
		fmt.Fprintln(sio.out, "mode:     off: managed.json does not switch coworkbridge on (cowork_enabled), so nothing is judged or applied")
	case used.Mode == managedconfig.Observe:
		fmt.Fprintln(sio.out, "mode:     observe: managed.json's mode records this decision and applies nothing")
	}
	for i, e := range c.Effects(p) {
		label := "effects: "
		if i > 0 {
			label = "         "
		}
		fmt.Fprintf(sio.out, "%s %s\n", label, e)
	}
	if held != "" {
		fmt.Fprintf(sio.out, "note:     %s\n", held)
	}
	for i, l := range strings.Split(shown, "\n") {
		if l == "" {
			continue
		}
		label := "shown:   "
		if i > 0 {
			label = "         "
		}
		fmt.Fprintf(sio.out, "%s %s\n", label, l)
	}
	fmt.Fprintf(sio.out, "policy:   %s, rules fingerprint %s\n", policySource(used), c.Fingerprint())
	return exitOK
}

// policySource names the configuration a decision came from, as decision-log records do.
func policySource(u policy.InUse) string {
	if u.Path == "" {
		return "the built-in rules (no managed.json on this Mac)"
	}
	return fmt.Sprintf("%s (config_hash %s, %s)", u.Path, u.Hash, u.Origin)
}

// heldBack says which rule the call would have met had the configuration not switched it off
// or put it in observe: "" when none.
func heldBack(ctx context.Context, u policy.InUse, p claudehook.Payload, v classifier.Verdict) string {
	if len(u.Policy.DisabledRules) == 0 && len(u.Policy.RuleModes) == 0 {
		return ""
	}
	all, err := policy.Unrestrained(u.Policy)
	if err != nil || all == nil {
		return ""
	}
	w := judgement.Judge{Rules: all}.Decide(ctx, judgement.Call{Door: judgement.Offline, Payload: p}).Verdict
	switch {
	case w.RuleID == "" || (w.RuleID == v.RuleID && !v.ObserveOnly):
		return ""
	case slices.Contains(u.Policy.DisabledRules, w.RuleID):
		return fmt.Sprintf("rule %s would have decided %s, but policy.disabled_rules switches it off", w.RuleID, w.Decision)
	case u.Policy.RuleModes[w.RuleID] == managedconfig.Observe:
		return fmt.Sprintf("rule %s decides %s, but policy.rule_modes puts it in observe: reported, not applied", w.RuleID, w.Decision)
	}
	return ""
}

// policyOf is the policy of a candidate managed.json, named as the one in force is; with no
// candidate, the one in force.
func policyOf(candidate string) (policy.InUse, error) {
	env, err := managedconfig.SystemEnv()
	if err != nil {
		return policy.InUse{}, err
	}
	return policyFor(env, candidate)
}

// previewed is this machine, or the one --platform and --home describe: its map of protected
// places is the one judged with.
func previewed(platform, home string) (managedconfig.Env, error) {
	env, err := managedconfig.SystemEnv()
	if err != nil {
		return env, err
	}
	switch platform {
	case "", env.GOOS:
	case "darwin", "linux":
		env.GOOS = platform
		// The program is where that platform's package puts it, not this machine's binary.
		env.Executable = map[string]string{"darwin": managedconfig.MacExecutable}[platform]
		if home == "" && platform == "darwin" {
			home = "/Users/" + cmp.Or(filepath.Base(env.Home), "user")
		}
	default:
		return env, fmt.Errorf("--platform %q: want darwin or linux", platform)
	}
	if home != "" {
		if !filepath.IsAbs(home) {
			return env, fmt.Errorf("--home %q: want an absolute folder, such as /Users/ada", home)
		}
		env.Home = filepath.Clean(home)
	}
	if platform != "" || home != "" {
		env = env.WithoutOverrides() // the machine previewed has none of this one's development folders
	}
	return env, nil
}

// policyFor is policyOf on the machine env describes.
func policyFor(env managedconfig.Env, candidate string) (policy.InUse, error) {
	paths, err := env.Paths()
	if err != nil {
		return policy.InUse{}, err
	}
	if candidate != "" {
		return policy.CandidateInUse(candidate, env, paths)
	}
	return policy.Used(env, paths)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func stdinIsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTerminal(f)
}

// policyClassifier compiles the policy this user's daemon runs (policy.InForce).
func policyClassifier() (c *classifier.Classifier, note string, err error) {
	env, err := managedconfig.SystemEnv()
	if err != nil {
		return nil, "", err
	}
	paths, err := env.Paths()
	if err != nil {
		return nil, "", err
	}
	return policy.InForce(env, paths)
}

func checkPayload(bash, write, cwd string, args []string, stdin io.Reader) (claudehook.Payload, error) {
	switch {
	case bash != "":
		in, _ := json.Marshal(map[string]string{"command": bash})
		return claudehook.Payload{ToolName: "Bash", ToolInput: in, Cwd: cwd, HookEventName: "PreToolUse"}, nil
	case write != "":
		in, _ := json.Marshal(map[string]string{"file_path": write, "content": ""})
		return claudehook.Payload{ToolName: "Write", ToolInput: in, Cwd: cwd, HookEventName: "PreToolUse"}, nil
	}
	var data []byte
	var err error
	if len(args) > 0 && args[0] != "-" {
		data, err = os.ReadFile(args[0])
	} else {
		data, err = io.ReadAll(io.LimitReader(stdin, 64<<20))
	}
	if err != nil {
		return claudehook.Payload{}, fmt.Errorf("read payload: %w", err)
	}
	return claudehook.ParsePayload(data)
}

func tallyLine(name string, t corpus.Tally) string {
	pct := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	line := fmt.Sprintf("%-14s rows %5d  deny caught %4d/%-4d (%5.1f%%, denied %5.1f%%)  allow blocked %4d/%-4d (%4.1f%%)  allow asked %4d (%4.1f%%)  crashes %d",
		name, t.Rows, t.Caught, t.DenyRows, pct(t.Caught, t.DenyRows), pct(t.Denied, t.DenyRows), t.FalseBlocks, t.AllowRows, pct(t.FalseBlocks, t.AllowRows),
		t.Asks, pct(t.Asks, t.AllowRows), t.Crashes)
	if t.EitherRows > 0 {
		line += fmt.Sprintf("  deny-or-ask caught %d/%d (%.1f%%)", t.EitherCaught, t.EitherRows, pct(t.EitherCaught, t.EitherRows))
	}
	return line
}

// scoreCorpus prints how c agrees with the labels of a corpus file: all rows, the scored subset
// (rows that need no context and are not must-not-crash edge cases), and with showMisses each
// disagreement.
func scoreCorpus(ctx context.Context, c *classifier.Classifier, file string, show corpusShow, out io.Writer) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("open corpus: %w", err)
	}
	defer f.Close()
	s, err := corpus.Measure(ctx, c, f)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	fmt.Fprintln(out, filepath.Base(file))
	fmt.Fprintln(out, "  "+tallyLine("all", s.All))
	fmt.Fprintln(out, "  "+tallyLine("scored", s.Scored))
	if show.misses {
		listRows(out, file, s.Misses)
	}
	if show.asks && len(s.Asked) > 0 {
		byRule := map[string]int{}
		for _, m := range s.Asked {
			byRule[m.Rule]++
		}
		rules := slices.SortedFunc(maps.Keys(byRule), func(a, b string) int {
			return cmp.Or(byRule[b]-byRule[a], strings.Compare(a, b))
		})
		fmt.Fprint(out, "  allow rows asked, by rule:")
		for _, r := range rules {
			fmt.Fprintf(out, " %s %d", r, byRule[r])
		}
		fmt.Fprintln(out)
		listRows(out, file, s.Asked)
	}
	return nil
}

// corpusShow says which rows check --corpus lists beside its tallies.
type corpusShow struct{ misses, asks bool }

func listRows(out io.Writer, file string, rows []corpus.Miss) {
	for _, m := range rows {
		where := fmt.Sprintf("%s:%d", filepath.Base(file), m.Line)
		if m.ID != "" {
			where += " " + m.ID
		}
		fmt.Fprintf(out, "  %s expect %s got %s %s: %q\n", where, m.Expect, m.Got, m.Rule, m.Command)
	}
}

// sessionHolding is the folder of the Cowork session that holds dir, or "".
func sessionHolding(places []managedconfig.Place, dir string) string {
	var roots []string
	for _, p := range places {
		if p.Owner == managedconfig.OwnerSessions {
			roots = append(roots, p.Path)
		}
	}
	if p, ok := session.Locate(roots, dir); ok && p.Level >= session.LevelSession {
		return p.Dir
	}
	return ""
}

// placeRules are the rules that judge a call on a place of each owner, for --places.
var placeRules = map[string]string{
	managedconfig.OwnerGuard:    "read.guard-files, path.guard-files: no read, no write",
	managedconfig.OwnerSessions: "read.other-session, path.other-session: a session's own folder only",
	managedconfig.OwnerApp:      "path.claude-config: read, no write",
	managedconfig.OwnerManaged:  "path.claude-config: read, no write",
}

func checkPlaces(machine managedconfig.Env, asJSON bool, sio stdio) int {
	used, err := policyFor(machine, "")
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge check:", err)
		return exitFail
	}
	if asJSON {
		json.NewEncoder(sio.out).Encode(used.Policy.Places)
		return exitOK
	}
	for _, p := range used.Policy.Places {
		path := p.Path
		if p.Stem {
			path += "*"
		}
		fmt.Fprintf(sio.out, "%-24s %s\n%-24s   %s; %s\n", p.Owner, path, "", p.What, placeRules[p.Owner])
	}
	return exitOK
}
