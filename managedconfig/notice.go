package managedconfig

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

// Notice is what the organisation tells a user whose call coworkbridge denies or asks about,
// beside coworkbridge's own reason: its words, and a page to read more (as Santa's block message
// and event detail URL).
type Notice struct {
	Text string
	// HelpURL may hold placeholders: {rule}, {rid}, {decision}, {session}, {user}, {host}.
	HelpURL string
}

// Notices are the default notice and those of particular rules; a rule's notice takes its
// text and its URL each from the default when it does not set them.
type Notices struct {
	Default Notice
	Rules   map[string]Notice
}

// NoticeFacts fill a help URL's placeholders.
type NoticeFacts struct {
	Rule, RID, Decision, Session, User, Host string
}

// maxNoticeText bounds the admin's words: they are shown to the user and the model on every
// deny, and a page of text would bury coworkbridge's own reason.
const maxNoticeText = 500

// noticeVar finds a help URL's placeholders.
var noticeVar = lazyregexp.New(`\{([^{}]*)\}`)

func noticeVars() []string { return []string{"rule", "rid", "decision", "session", "user", "host"} }

// For is the notice that applies to rule.
func (n Notices) For(rule string) Notice {
	out := n.Default
	if r, ok := n.Rules[rule]; ok {
		if r.Text != "" {
			out.Text = r.Text
		}
		if r.HelpURL != "" {
			out.HelpURL = r.HelpURL
		}
	}
	return out
}

// Explain is the text Claude Code shows for a deny or an ask: the admin's words for the rule,
// coworkbridge's reason, and the help page with its placeholders filled in (each value escaped
// for a URL). With no notice configured it is the reason alone.
//
// The default text is block_message's, words for a call that was stopped: an ask, which the user
// may let through, gets only a rule's own text, and the help page.
func (n Notices) Explain(reason string, f NoticeFacts) string {
	nt := n.For(f.Rule)
	if f.Decision == "ask" && n.Rules[f.Rule].Text == "" {
		nt.Text = ""
	}
	parts := make([]string, 0, 3)
	if nt.Text != "" {
		parts = append(parts, nt.Text)
	}
	parts = append(parts, reason)
	if nt.HelpURL != "" {
		parts = append(parts, "More: "+fillURL(nt.HelpURL, f))
	}
	return strings.Join(parts, "\n")
}

// Frame is what Explain puts before and after a reason, for a deny whose reason is written later
// (the hook script's own, when coworkbridge cannot answer): the default notice, with the facts
// known now filled into its help page.
func (n Notices) Frame(f NoticeFacts) (before, after string) {
	if n.Default.Text != "" {
		before = n.Default.Text + "\n"
	}
	if n.Default.HelpURL != "" {
		after = "\nMore: " + fillURL(n.Default.HelpURL, f)
	}
	return before, after
}

func fillURL(tmpl string, f NoticeFacts) string {
	vals := map[string]string{"rule": f.Rule, "rid": f.RID, "decision": f.Decision, "session": f.Session, "user": f.User, "host": f.Host}
	return noticeVar.ReplaceAllStringFunc(tmpl, func(m string) string {
		return url.QueryEscape(vals[m[1:len(m)-1]])
	})
}

// blockMessage parses managed.json's block_message: {"text", "help_url", "rules": {id: {...}}}.
func (p *parser) blockMessage(field string, raw json.RawMessage) {
	members, ok := p.object(field, raw)
	if !ok {
		return
	}
	ns := &p.cfg.Policy.Notices
	p.notice(field, members, &ns.Default, true)
}

// notice parses one notice's fields; the default's object also holds the rules' notices.
func (p *parser) notice(field string, members []member, dst *Notice, withRules bool) {
	fields := map[string]func(string, json.RawMessage){
		"text": func(f string, r json.RawMessage) {
			if s, ok := p.str(f, r); ok && p.noticeText(f, s) {
				dst.Text = s
			}
		},
		"help_url": func(f string, r json.RawMessage) {
			if s, ok := p.str(f, r); ok && p.helpURL(f, s) {
				dst.HelpURL = s
			}
		},
	}
	if withRules {
		fields["rules"] = p.noticeRules
	}
	p.eachMember(field, members, fields)
}

func (p *parser) noticeRules(field string, raw json.RawMessage) {
	members, ok := p.object(field, raw)
	if !ok {
		return
	}
	rules := map[string]Notice{}
	for _, m := range members {
		f := field + "." + m.key
		if !ruleID.MatchString(m.key) {
			p.addf(f, "%q is not a rule id (lower-case letters, digits, '.', '_' and '-')", m.key)
			continue
		}
		inner, ok := p.object(f, m.raw)
		if !ok {
			continue
		}
		var n Notice
		p.notice(f, inner, &n, false)
		rules[m.key] = n
	}
	p.cfg.Policy.Notices.Rules = rules
}

func (p *parser) noticeText(field, s string) bool {
	switch {
	case strings.TrimSpace(s) == "":
		p.addf(field, "empty; leave the field out to show coworkbridge's reason alone")
	case len(s) > maxNoticeText:
		p.addf(field, "%d bytes; keep it under %d (the reason and a help_url follow it) and put the rest on the help page", len(s), maxNoticeText)
	case strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }):
		p.addf(field, "holds a control character or invalid UTF-8; write it on one line of plain text")
	default:
		return true
	}
	return false
}

func (p *parser) helpURL(field, s string) bool {
	for _, m := range noticeVar.FindAllStringSubmatch(s, -1) {
		if !slices.Contains(noticeVars(), m[1]) {
			p.addf(field, "{%s} is not a placeholder; use %s", m[1], "{"+strings.Join(noticeVars(), "}, {")+"}")
			return false
		}
	}
	u, err := url.Parse(fillURL(s, NoticeFacts{}))
	switch {
	case err != nil:
		p.addf(field, "not a URL: %v", err)
	case u.Scheme == "http":
		p.addf(field, "%q is http://: the link carries the rule, session, user and host in the clear; use https://", s)
	case u.Scheme != "https":
		p.addf(field, "%q: want an https:// address of a page users can open", s)
	case u.Host == "":
		p.addf(field, "%q has no host", s)
	default:
		return true
	}
	return false
}

// String is the notice as `rules` and `check` show it.
func (nt Notice) String() string {
	switch {
	case nt.Text != "" && nt.HelpURL != "":
		return fmt.Sprintf("%q, more at %s", nt.Text, nt.HelpURL)
	case nt.Text != "":
		return fmt.Sprintf("%q", nt.Text)
	case nt.HelpURL != "":
		return "more at " + nt.HelpURL
	}
	return ""
}
