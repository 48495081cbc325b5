package privsep

import (
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/flow"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// The kinds of message. Worker to root: decide, refuse, findings and records are requests;
// health, log and stats are notes. Root to worker: setup, receipt and clock (the wall clock ran
// ahead of root's timers: renew the leases due) are notes; view is a request.
const (
	kindDecide   = "decide"
	kindRefuse   = "refuse"
	kindFindings = "findings"
	kindRecords  = "records"
	kindHealth   = "health"
	kindLog      = "log"
	kindStats    = "stats"
	kindSetup    = "setup"
	kindView     = "view"
	kindReceipt  = "receipt"
	kindClock    = "clock"
)

// Setup is what root tells a worker to do: guard the user's sessions under Config, or idle.
// A worker starts idle and follows each Setup as it comes.
type Setup struct {
	// On: guard the sessions roots in Config. Off: stop guarding, and with Unhook take our
	// hooks out of every session first (an admin switched coworkbridge off).
	On, Unhook bool
	// Config is the configuration in force, with this user's sessions roots only.
	Config managedconfig.Config
	// Places are the protected places' paths (all, the guard's, the sessions'), for the worker
	// to know them by identity when it works out where a call's links lead.
	Places [3][]string
	// Secrets are the folders the read rules protect (~/.ssh), searched for a file's other
	// names in the user's home.
	Secrets []string `json:",omitempty"`
	// Recorded are request ids of this user's already in the decision log: a spool line
	// replayed after a crash is skipped, not recorded twice.
	Recorded []string
	// Host and User fill the admin's notice; User is the name root knows the worker's uid by.
	Host, User string
	// DropIn is the path of the managed-settings drop-in (collector.Options.DropIn): root's
	// folder, readable by every user.
	DropIn string
	// BudgetRecords, ForgedAfter and SpoolPoll are the tests' overrides root was started with
	// (0: the deployment's values).
	BudgetRecords int
	ForgedAfter   time.Duration
	SpoolPoll     time.Duration
}

// refusal is a call no rule can judge, with the rule and reason it is refused under.
type refusal struct {
	Call         judgement.Call
	Rule, Reason string
}

// decision is a call to judge; FlowErr is the call's, which an error cannot carry as JSON.
type decision struct {
	Call    judgement.Call
	FlowErr string `json:",omitempty"`
}

// HealthNote is one thing a worker's injector or collector tells health; Op names the method
// of health (and of injector.Recorder) it stands for.
type HealthNote struct {
	Op         string          `json:"op"`
	ID         string          `json:"id,omitempty"`
	Dir        string          `json:"dir,omitempty"`
	Decision   health.Decision `json:"decision,omitempty"`
	Latency    time.Duration   `json:"latency,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Until      time.Time       `json:"until,omitzero"`
	Files      map[string][]string
	Names      []string    `json:"names,omitempty"`
	Code       health.Code `json:"code,omitempty"`
	N          int         `json:"n,omitempty"`
	Unverified bool        `json:"unverified,omitempty"`
	Scan       *health.ScanReport
}

// logLine is one line of a worker's log, for root's log.
type logLine struct {
	Level int            `json:"level"`
	Msg   string         `json:"msg"`
	Attrs map[string]any `json:"attrs,omitempty"`
}

// Stats is what a worker last said of itself.
type Stats struct {
	Watches  int `json:"watches"`
	Sessions int `json:"sessions"`
}

// viewAsk asks a worker what it sees of a host call root judges at the socket: where the
// call's links lead, as the user, and the state of its session (Session "": none). One question
// per call, where two (links, then session) cost root and the worker a round trip each.
type viewAsk struct {
	Payload claudehook.Payload `json:"payload"`
	Session string             `json:"session,omitempty"`
}

// viewAnswer is the worker's answer to a viewAsk.
type viewAnswer struct {
	Resolution judgement.Resolution `json:"resolution"`
	Session    SessionState         `json:"session"`
}

// SessionState is a tracked session's state as a host call of it is judged.
type SessionState struct {
	Tracked     bool       `json:"tracked"`
	Quarantined string     `json:"quarantined,omitempty"`
	Flow        flow.State `json:"flow"`
}

// receiptNote hands a worker the receipt of a call of its session root judged at the socket.
type receiptNote struct {
	ID      string             `json:"id"`
	Receipt claudehook.Receipt `json:"receipt"`
}
