package effects

import (
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
)

func TestAContainerSpecIsJudgedByWhatItGivesOfTheHost(t *testing.T) {
	tests := []struct {
		name, kind, text string
		want             string // an attribute of the container effect, "" for none
	}{
		{"privileged pod", facts.ConfigPodSpec, "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: x\n    securityContext:\n      privileged: true\n", "privileged"},
		{"host pid pod", facts.ConfigPodSpec, "apiVersion: v1\nkind: Pod\nspec:\n  hostPID: true\n", "host-namespace=pid"},
		{"pod with a host path", facts.ConfigPodSpec, "apiVersion: v1\nkind: Pod\nspec:\n  volumes:\n  - name: h\n    hostPath:\n      path: /\n", "host-path"},
		{"pod in JSON with a capability", facts.ConfigPodSpec, `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"securityContext":{"capabilities":{"add":["SYS_ADMIN"]}}}]}}`, "cap=SYS_ADMIN"},
		{"ordinary pod", facts.ConfigPodSpec, "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: x\n    securityContext:\n      privileged: false\n      runAsNonRoot: true\n", ""},
		{"compose privileged", facts.ConfigCompose, "services:\n  x:\n    privileged: true\n", "privileged"},
		{"compose host pid", facts.ConfigCompose, "services:\n  x:\n    pid: \"host\"\n", "host-namespace=pid"},
		{"compose docker socket, short syntax", facts.ConfigCompose, "services:\n  x:\n    volumes:\n      - \"/var/run/docker.sock:/var/run/docker.sock:ro\"\n", "docker-socket=/var/run/docker.sock"},
		{"compose host root, long syntax", facts.ConfigCompose, "services:\n  x:\n    volumes:\n      - type: bind\n        source: /\n        target: /host\n", "host-root"},
		{"compose capability in a flow list", facts.ConfigCompose, "services:\n  x:\n    cap_add: [NET_BIND_SERVICE, SYS_PTRACE]\n", "cap=SYS_PTRACE"},
		{"compose raw device", facts.ConfigCompose, "services:\n  x:\n    devices:\n      - /dev/sda:/dev/sda\n", "device=/dev/sda"},
		{"compose unconfined", facts.ConfigCompose, "services:\n  x:\n    security_opt:\n      - seccomp:unconfined\n", "unconfined"},
		{"compose home", facts.ConfigCompose, "services:\n  x:\n    volumes:\n      - ~:/root/home\n", "host-home"},
		{"ordinary compose", facts.ConfigCompose, "services:\n  db:\n    image: postgres\n    network_mode: bridge\n    cap_add:\n      - NET_BIND_SERVICE\n    volumes:\n      - ./data:/var/lib/postgresql/data\n      - pgdata:/x\n  # privileged: true\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es := SpecEffects(tt.kind, "spec.yaml", tt.text, "/Users/ada/p")
			got := ""
			if len(es) > 0 {
				got = es[0].String()
			}
			switch {
			case tt.want == "" && got != "":
				t.Errorf("got %s, want none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("got %q, want one with %s", got, tt.want)
			}
		})
	}
}

func FuzzComposeGrants(f *testing.F) {
	f.Add("services:\n  x:\n    volumes:\n      - /:/host\n    cap_add: [ALL]\n    pid: host\n")
	f.Add("- source: /\n- a\nkey: [a, b\n  # c\n")
	f.Fuzz(func(t *testing.T, text string) {
		attrs := composeGrants(text, "/p")
		if len(attrs)%2 != 0 {
			t.Fatalf("attributes come in pairs: %q", attrs)
		}
		yamlLists(text)
	})
}
