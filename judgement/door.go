package judgement

import "github.com/coworkbridge/coworkbridge/telemetry"

// Door is how a call, or what is recorded in its place, reached the guard. It says what the
// record's transport is and which agent made the call, and the code that answers a hook branches
// on it, never on the record's text.
type Door int

// The doors. A new transport is one more Door: its transport name in telemetry (and the record
// schema), its agent here, and a caller that reads the call, calls Decide and answers.
const (
	// Spool: a Cowork hook in the VM appended the call to the session's spool; the daemon
	// answers it with a decision file beside the agent.
	Spool Door = iota + 1
	// Channel: a Cowork hook on the Mac handed the call over through the session's host
	// channel, out of the agent's reach.
	Channel
	// Hook: `coworkbridge hook` judged the call in its own process on the Mac.
	Hook
	// Socket: a host hook handed the call to the system-mode daemon over its socket; the
	// kernel names the caller.
	Socket
	// Dropped: a hook judged the call alone and left its record in a drop folder, imported
	// under the file's owner.
	Dropped
	// Transcript: found in the CLI's transcript, reported by no hook.
	Transcript
	// Log: found in the decision log itself (a record cut or edited).
	Log
	// Offline: judged again where nothing runs and nothing is recorded (check, a replay, a
	// corpus).
	Offline
)

var doors = [...]struct {
	transport, agent string
}{
	Spool:      {telemetry.TransportSpool, "cowork"},
	Channel:    {telemetry.TransportChannel, "cowork"},
	Hook:       {telemetry.TransportHook, "claude-code"},
	Socket:     {telemetry.TransportSocket, "claude-code"},
	Dropped:    {telemetry.TransportDropped, "claude-code"},
	Transcript: {telemetry.TransportTranscript, "cowork"},
	Log:        {telemetry.TransportLog, "cowork"},
	Offline:    {"offline", ""},
}

// Transport is what the decision log says of the door.
func (d Door) Transport() string {
	if d <= 0 || int(d) >= len(doors) {
		return ""
	}
	return doors[d].transport
}

// Agent is who makes the calls that come through the door: "cowork" for a session's own hook
// (and what the daemon finds in a session), "claude-code" for the CLI's managed hook on the Mac.
func (d Door) Agent() string {
	if d <= 0 || int(d) >= len(doors) {
		return ""
	}
	return doors[d].agent
}

func (d Door) String() string { return d.Transport() }

// Waits reports whether a hook at the door always waits for its answer: a hook on the Mac
// prints what the judgement decides, in either mode. A Cowork hook waits only in enforce.
func (d Door) Waits() bool { return d == Hook || d == Socket }
