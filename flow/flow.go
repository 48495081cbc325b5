// Package flow keeps what one session has taken in and read, so that a call that sends data out
// is judged by what came before it: the untrusted content the session took in last (a web page, a
// connector's result, a file in uploads/) and the private data it read last (a secret place, a
// credential), each with the call that brought it, and prints of what the private reads showed
// (see Learn), so that a send is judged by whether it carries any of it. The state is two marks
// and at most maxPrints prints, whatever the length of the session, and persists as a small note.
//
// It does not classify calls (package classifier says what a call takes in, reads and sends) and
// decides nothing: it writes the line the flow rules match.
package flow

import (
	"encoding/json"
	"strings"
	"time"
)

// NoteKey is where a session's flow is kept in the daemon's offsets store: beside the session's
// positions, under the folder's path (see collector's lane, which writes it).
func NoteKey(sessionDir string) string { return sessionDir + "#f" }

// maxNote bounds a note read back: two marks and maxPrints prints.
const maxNote = 8 << 10

// maxWhat bounds what a mark keeps of a source or a path.
const maxWhat = 160

// Mark is one call that changed the flow.
type Mark struct {
	Call string    `json:"call"` // its tool_use_id (or request id)
	Tool string    `json:"tool"`
	What string    `json:"what"` // the source taken in, or what was read
	At   time.Time `json:"at"`
	// Seen: what the call read has been taken in as prints (a private read's result, from the
	// transcript); until then a send is judged by its shape alone.
	Seen bool `json:"seen,omitempty"`
}

// State is a session's flow.
type State struct {
	Untrusted *Mark `json:"untrusted,omitempty"`
	Private   *Mark `json:"private,omitempty"`
	// Prints are what the session's private reads held, as hashes (see Learn): base64 of
	// little-endian uint32s, decoded only when a send is judged.
	Prints string `json:"prints,omitempty"`
}

// Take notes what a judged call took in and read (each "" when nothing); a call that was not
// let run (denied and enforced) takes in and reads nothing, and is not to be taken.
func (s *State) Take(untrusted, private, call, tool string, at time.Time) {
	if untrusted != "" {
		s.Untrusted = &Mark{Call: cut(call), Tool: cut(tool), What: cut(untrusted), At: at}
	}
	if private != "" {
		s.Private = &Mark{Call: cut(call), Tool: cut(tool), What: cut(private), At: at}
	}
}

// Line is the flow line of a call that sends to dest (see classifier.TargetFlow), carrying what
// carries says (classifier.Carried): "" for a call that sends nothing.
func (s *State) Line(dest, carries string) string {
	if dest == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("send to=" + word(dest))
	if s.Private != nil {
		b.WriteString(" private=" + word(s.Private.Call+":"+s.Private.What))
	}
	if s.Untrusted != nil {
		b.WriteString(" untrusted=" + word(s.Untrusted.Call+":"+s.Untrusted.What))
	}
	if carries != "" {
		b.WriteString(" carries=" + word(carries))
	}
	return b.String()
}

// Evidence names the three calls of a flow a rule found, for the record and the hook's reason.
func (s *State) Evidence(call, tool, dest string) []string {
	var out []string
	if m := s.Untrusted; m != nil {
		out = append(out, "took in "+m.What+" ("+m.Tool+" "+m.Call+")")
	}
	if m := s.Private; m != nil {
		out = append(out, "read "+m.What+" ("+m.Tool+" "+m.Call+")")
	}
	return append(out, "sends to "+cut(dest)+" ("+tool+" "+cut(call)+")")
}

// Marshal is the state as a note; nil when it holds nothing.
func (s *State) Marshal() []byte {
	if s.Untrusted == nil && s.Private == nil {
		return nil
	}
	data, _ := json.Marshal(s)
	return data
}

// Restore reads a note Marshal wrote; anything else leaves the state empty.
func Restore(note []byte) State {
	var s State
	if len(note) == 0 || len(note) > maxNote || json.Unmarshal(note, &s) != nil {
		return State{}
	}
	for _, m := range []*Mark{s.Untrusted, s.Private} {
		if m != nil {
			m.Call, m.Tool, m.What = cut(m.Call), cut(m.Tool), cut(m.What)
		}
	}
	return s
}

func cut(s string) string {
	if len(s) > maxWhat {
		return s[:maxWhat]
	}
	return s
}

// word makes s one word of a flow line: its spaces would split the line's fields.
func word(s string) string {
	return strings.Join(strings.Fields(cut(s)), "_")
}
