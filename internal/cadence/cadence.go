// Package cadence decides at which of the periodic rescans a session is looked at in full.
//
// The rescan is the net behind the watchers: it finds what they missed (events lost, a change no
// watch reports). Looking at every session in full at every rescan was most of what an idle
// daemon spent, so a session whose last full look found nothing to do, and that nothing has
// stirred since, is calm, and a rescan passes it over. A session found calm again at the end of a
// rest rests twice as long the next time, up to MaxRest rescans: a session left open for hours
// costs little, and a session in use is looked at every rescan. Anything that stirs a session
// ends its rest at once.
//
// A Schedule is one session's cadence, owned by whoever schedules its looks (the collector, the
// injector), under their lock. The package knows nothing of what a look does.
package cadence

// The rests, in rescans: a session is passed over by FirstRest-1 rescans after the full look
// that first found it calm, and rests doubled from then on, up to MaxRest. At the default 30 s
// rescan that is 2, 4, 8 and then 16 minutes between full looks.
//
// MaxRest bounds three things: what an idle session costs (its full look, with the lease
// renewals, is most of it), how long a change no watch reports waits in a session that makes no
// call (a call, or a transcript line, ends the rest), and how long a lease written by a look
// outlasts a daemon killed outright (its hooks then wait out their timeout and deny, instead of
// denying at once; a stop withdraws the leases). Sixteen minutes keeps all three small.
const (
	FirstRest = 4
	MaxRest   = 32
)

// ToLongest is how many rescans after the full look that first finds a session calm it comes to
// rest its longest, if nothing stirs it: the rests before MaxRest, added up.
func ToLongest() int {
	n := 0
	for r := FirstRest; r < MaxRest; r *= 2 {
		n += r
	}
	return n
}

// Schedule is one session's cadence. Its zero value is a session not calm: looked at in full by
// every rescan.
type Schedule struct {
	calm   bool
	rest   int // rescans from one full look to the next while calm
	rested int // rescans that passed the session over since its last full look
}

// Calm reports whether the last full look found the session calm and nothing stirred it since.
func (s *Schedule) Calm() bool { return s.calm }

// Resting reports whether the next rescan passes the session over.
func (s *Schedule) Resting() bool { return s.calm && s.rested < s.rest-1 }

// Pass is the rescan's question: it reports whether this rescan passes the session over, and
// counts the rescan if so. A session not passed over is due for a full look.
func (s *Schedule) Pass() bool {
	if !s.Resting() {
		s.rested = 0
		return false
	}
	s.rested++
	return true
}

// Looked notes what a full look found: the session calm (found nothing, left nothing for time to
// settle, watched whole, not stirred meanwhile) or not. A session calm before the look and calm
// after it rests twice as long as it last did.
func (s *Schedule) Looked(calm bool) {
	switch {
	case !calm:
		s.rest = 0
	case s.calm:
		s.rest = min(2*s.rest, MaxRest)
	default:
		s.rest = FirstRest
	}
	s.calm, s.rested = calm, 0
}

// Stir notes that something happened in the session: it is looked at by the next rescan, and
// rests from FirstRest again once a look finds it calm.
func (s *Schedule) Stir() { s.calm = false }

// Longest is the most rescans that may pass, from a full look starting now, before the one after
// it: the rest the look can leave the session in. A lease written by the look must outlast it.
func (s *Schedule) Longest() int {
	if s.calm {
		return max(min(2*s.rest, MaxRest), FirstRest)
	}
	return FirstRest
}
