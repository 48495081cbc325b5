package effects

import (
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// What a connector call does beyond the files and URLs its arguments name, judged by the shape of
// its arguments and the words of its tool's name, never by the server's name (servers may be
// named by a UUID): a repository or gist made public, a message with a recipient the user does
// not see, a mail rule that forwards what arrives.

// nameWords are the words of a connector's or tool's name, lowercased: the name split at _, -
// and dots.
func nameWords(names ...string) map[string]bool {
	out := map[string]bool{}
	for _, name := range names {
		for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
			out[w] = true
		}
	}
	return out
}

// NameHas reports whether one of the names' words is in set.
func NameHas(set *nameset.Set, names ...string) bool {
	for w := range nameWords(names...) {
		if set.Has(w) {
			return true
		}
	}
	return false
}

func anyWord(words map[string]bool, of ...string) bool {
	for _, w := range of {
		if words[w] {
			return true
		}
	}
	return false
}

// walkValues calls fn for every value in a decoded JSON value (objects and arrays before what they
// hold) with the key it is under, down to mcpMaxDepth, until mcpMaxStrings values that are
// neither objects nor arrays have been seen.
func walkValues(v any, key string, depth int, n *int, fn func(key string, v any)) {
	if depth > mcpMaxDepth || *n >= mcpMaxStrings {
		return
	}
	fn(key, v)
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			walkValues(e, key, depth+1, n, fn)
		}
	case map[string]any:
		for k, e := range v {
			walkValues(e, k, depth+1, n, fn)
		}
	default:
		*n++
	}
}

// ConnectorEffects are the publish and message effects of one connector call.
func ConnectorEffects(by, tool string, args any) []Effect {
	words := nameWords(tool)
	var public, hidden, forward []string
	n := 0
	walkValues(args, "", 0, &n, func(key string, v any) {
		k := strings.ToLower(strings.ReplaceAll(key, "-", "_"))
		switch {
		case k == "private" && v == false, (k == "visibility" || k == "repository_visibility") && strings.EqualFold(str(v), "public"),
			k == "public" && v == true, k == "is_public" && v == true:
			public = append(public, key)
		case k == "bcc" || k == "bcc_recipients" || k == "bccrecipients" || k == "blind_copy":
			hidden = append(hidden, addresses(v)...)
		case strings.Contains(k, "forward") && (strings.Contains(k, "to") || strings.Contains(k, "address") || strings.Contains(k, "email") || k == "forward"):
			forward = append(forward, addresses(v)...)
		}
	})
	var out []Effect
	if len(public) > 0 {
		switch {
		case anyWord(words, "update", "edit", "patch", "change", "set", "modify", "transfer"):
			out = append(out, New(EffectPublish, by, "existing", "", "what", "visibility to public"))
		case anyWord(words, "create", "fork", "new", "publish", "share", "upload", "gist"):
			out = append(out, New(EffectPublish, by, "new", "", "what", "a new public place"))
		}
	}
	if len(hidden) > 0 {
		out = append(out, New(EffectMessage, by, "hidden", "", "to", strings.Join(hidden, ",")))
	}
	if len(forward) > 0 {
		out = append(out, New(EffectMessage, by, "forward", "", "to", strings.Join(forward, ",")))
	}
	return append(out, pageScriptEffects(by, words, args)...)
}

// Browser automation runs a script in a page with the page's cookies and storage, which hold the
// user's sessions in every site the browser is signed in to.
var (
	pageSecrets = lazyregexp.New(`document\.cookie|\bcookieStore\b|\b(local|session)Storage\b|\bindexedDB\b|navigator\.credentials|type\s*=\s*["']?password|\.password\b`)
	pageSends   = lazyregexp.New(`\bfetch\s*\(|XMLHttpRequest|sendBeacon|new\s+Image\b|\.src\s*=|new\s+(WebSocket|EventSource)\b|location(\.href)?\s*=|location\.(assign|replace)\s*\(|window\.open\s*\(|\.submit\s*\(|postMessage\s*\(|\bimport\s*\(`)
)

// pageScriptKey reports an argument (lower-cased, without _) that holds a page script.
func pageScriptKey(k string) bool {
	switch k {
	case "function", "script", "expression", "code", "js", "javascript", "pagefunction", "source", "fn":
		return true
	}
	return false
}

// pageScriptEffects: a page script of a browser tool (evaluate, run a script) that reads the
// page's cookies, storage or passwords sends them when it also makes a request (deny), and
// hands them to the agent otherwise (ask, as a stored secret is).
func pageScriptEffects(by string, words map[string]bool, args any) []Effect {
	if !anyWord(words, "evaluate", "eval", "script", "javascript", "js", "execute") {
		return nil
	}
	var out []Effect
	n := 0
	WalkStrings(args, "", 0, &n, func(key, v string) {
		k := strings.ToLower(strings.ReplaceAll(key, "_", ""))
		if !pageScriptKey(k) || len(out) > 0 {
			return
		}
		what := pageSecrets.FindString(v)
		switch {
		case what == "":
		case pageSends.MatchString(v):
			out = append(out, New(EffectSend, by, "data", "page:"+what, "secret", "", "to", "a request the page script makes"))
		default:
			out = append(out, New(EffectCredential, by, "what", "page:"+what, "stored", ""))
		}
	})
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// addresses are the non-empty strings a recipient field holds (one, a list, or objects with an
// address in them).
func addresses(v any) []string {
	var out []string
	n := 0
	WalkStrings(v, "", 0, &n, func(_, s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	})
	return out
}

// memoryWords, among the words of a connector's or tool's name, mark one that keeps what the
// agent will read back as memory; readingWords mark a tool that only reads it.
var memoryWords = []string{"memory", "memories", "remember", "memorize", "memorise", "mem0", "observation", "observations",
	"entity", "entities", "knowledge", "relations", "facts", "fact"}

var readingWords = []string{"search", "read", "get", "list", "query", "retrieve", "find", "open", "recall", "fetch", "lookup", "view"}

// MemoryTool reports a tool that writes to a memory the agent reads back.
func MemoryTool(server, tool string) bool {
	return anyWord(nameWords(server, tool), memoryWords...) && !anyWord(nameWords(tool), readingWords...)
}

// mcpLimits bound the work one call's arguments can cause.
const (
	mcpMaxDepth   = 16
	mcpMaxStrings = 2000
	mcpMaxString  = 256 << 10
)

// WalkStrings calls fn for every string in a decoded JSON value with the key it is under,
// within the limits (see walkValues).
func WalkStrings(v any, key string, depth int, n *int, fn func(key, v string)) {
	walkValues(v, key, depth, n, func(key string, v any) {
		if s, ok := v.(string); ok {
			if len(s) > mcpMaxString {
				s = s[:mcpMaxString]
			}
			fn(key, s)
		}
	})
}
