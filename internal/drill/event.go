package drill

import "time"

// Event is one attempt of one worker. Offsets are monotonic durations since
// the run started.
type Event struct {
	Worker   int           `json:"worker"`
	Attempt  int           `json:"attempt"`
	Token    string        `json:"token"`
	Start    time.Duration `json:"start_ns"`
	End      time.Duration `json:"end_ns"`
	Outcome  Outcome       `json:"outcome"`
	Phase    Phase         `json:"phase"`
	Category string        `json:"category,omitempty"`
	SQLState string        `json:"sqlstate,omitempty"`
	// Server identifies the postmaster that acknowledged the write: its
	// address as it sees it ("local" over a unix socket) and its start
	// time. A restarted postmaster on the same node is a new server.
	Server string `json:"server,omitempty"`
}
