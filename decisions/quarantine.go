package decisions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/coworkbridge/coworkbridge/session"
)

// A quarantine is told to the host hook through the session's host channel: under lockdown the
// host hook, not the session's own hook, answers every call on the Mac, and it keeps no state of
// its own. The file is the daemon's (in its state, out of the session), and says until when.

type quarantine struct {
	Until  int64  `json:"until"`
	Reason string `json:"reason"`
}

// maxQuarantine bounds what is read of the file; a reason is a line or two.
const maxQuarantine = 16 << 10

// WriteQuarantine tells the host hook that the session is quarantined until, for reason.
func WriteQuarantine(s *session.Session, until time.Time, reason string) error {
	if len(reason) > maxQuarantine/2 {
		reason = reason[:maxQuarantine/2]
	}
	data, _ := json.Marshal(quarantine{Until: until.Unix(), Reason: reason})
	if err := s.Publish(session.QuarantineFile, data, 0o644); err != nil {
		return fmt.Errorf("write quarantine: %w", err)
	}
	return nil
}

// ReadQuarantine returns until when the session is quarantined and why; the zero time when no
// quarantine was written. A file that cannot be read as one is an error: the caller, which
// guards calls, decides what that means.
func ReadQuarantine(s *session.Session) (time.Time, string, error) {
	data, err := s.ReadSole(session.QuarantineFile, maxQuarantine)
	if errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, "", nil
	}
	if err != nil {
		return time.Time{}, "", fmt.Errorf("read quarantine: %w", err)
	}
	var q quarantine
	if err := json.Unmarshal(data, &q); err != nil || q.Until <= 0 {
		return time.Time{}, "", fmt.Errorf("read quarantine: not one the daemon writes")
	}
	return time.Unix(q.Until, 0), q.Reason, nil
}
