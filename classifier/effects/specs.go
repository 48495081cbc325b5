package effects

import (
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

// A container's spec written to a file is the container started later (kubectl apply -f, docker
// compose up): what it takes of the host is read from the file as it is written, and judged as
// the same grants on a command line are (effect.container-escape).

// SpecEffects are the effects of a container spec of kind (facts.Config*) with content, written
// or started from (by names the file): a pod spec's or a compose file's grants of the host.
func SpecEffects(kind, by, content, cwd string) []Effect {
	var attrs []string
	content = withoutYAMLComments(content)
	switch kind {
	case facts.ConfigPodSpec:
		attrs = specGrants(content)
	case facts.ConfigCompose:
		attrs = composeGrants(content, cwd)
	}
	if len(attrs) == 0 {
		return nil
	}
	return []Effect{New(EffectContainer, by, attrs...)}
}

var composeHostNS = lazyregexp.New(`(?m)^\s*(pid|ipc|uts|userns_mode|network_mode|cgroup)\s*:\s*["']?host["']?\s*$`)

// composeGrants reads a compose file's services for the host they are given: privileged, host
// namespaces, capabilities, devices, unconfined profiles and bind mounts of the host's folders.
func composeGrants(text, cwd string) []string {
	var attrs grants
	add := attrs.add
	if specPrivileged.MatchString(text) {
		add("privileged", "")
	}
	if m := composeHostNS.FindStringSubmatch(text); m != nil {
		add("host-namespace", m[1])
	}
	for key, items := range yamlLists(text) {
		for _, it := range items {
			switch key {
			case "cap_add":
				if c := strings.TrimPrefix(strings.ToUpper(it), "CAP_"); escapeCaps.Has(c) {
					add("cap", c)
				}
			case "devices":
				if d, _, _ := strings.Cut(it, ":"); rawDevice.MatchString(d) {
					add("device", d)
				}
			case "security_opt":
				if strings.Contains(it, "unconfined") || strings.Contains(it, "label:disable") || strings.Contains(it, "label=disable") {
					add("unconfined", it)
				}
			case "volumes":
				if src, _, ok := strings.Cut(it, ":"); ok {
					mountGrant(src, cwd, add)
				}
			case "source":
				mountGrant(it, cwd, add)
			}
		}
	}
	return attrs
}

// yamlLists collects, from YAML text read line by line, the items of every list by the key that
// holds it (block items "- x" and flow lists "[x, y]"), and a long-syntax mount's "source: x" as
// an item of "source". Keys are lower-cased; quotes are removed. Enough for the few keys the
// grants are read from; it is no YAML parser, and what it does not understand it skips.
func yamlLists(text string) map[string][]string {
	out := map[string][]string{}
	var listKey string
	listIndent := -1
	for l := range strings.SplitSeq(text, "\n") {
		trimmed := strings.TrimSpace(stripYAMLComment(l))
		if trimmed == "" {
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " \t"))
		if item, ok := strings.CutPrefix(trimmed, "- "); ok && indent >= listIndent && listKey != "" {
			if k, v, ok := strings.Cut(item, ":"); ok && strings.TrimSpace(k) == "source" {
				out["source"] = append(out["source"], unquoteYAML(v))
			} else {
				out[listKey] = append(out[listKey], unquoteYAML(item))
			}
			continue
		}
		key, value, ok := strings.Cut(trimmed, ":")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.Trim(strings.TrimSpace(key), `"'`))
		value = strings.TrimSpace(value)
		switch {
		case key == "source":
			out["source"] = append(out["source"], unquoteYAML(value))
		case value == "":
			listKey, listIndent = key, indent
		case strings.HasPrefix(value, "["):
			for it := range strings.SplitSeq(strings.Trim(value, "[]"), ",") {
				out[key] = append(out[key], unquoteYAML(it))
			}
		default:
			if indent <= listIndent {
				listKey, listIndent = "", -1
			}
		}
	}
	return out
}

// withoutYAMLComments is text with its comments removed, line by line: a commented-out
// "privileged: true" grants nothing.
func withoutYAMLComments(text string) string {
	if !strings.Contains(text, "#") {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = stripYAMLComment(l)
	}
	return strings.Join(lines, "\n")
}

func stripYAMLComment(l string) string {
	if i := strings.Index(l, " #"); i >= 0 {
		return l[:i]
	}
	if strings.HasPrefix(strings.TrimSpace(l), "#") {
		return ""
	}
	return l
}

func unquoteYAML(s string) string {
	return strings.Trim(strings.TrimSpace(s), `"'`)
}
