package drill

import (
	"sort"
	"time"
)

// Summary is the part of a report people read first.
type Summary struct {
	Duration time.Duration   `json:"duration_ns"`
	Events   int             `json:"events"`
	Outcomes map[Outcome]int `json:"outcomes"`
	// WriteGap is the longest pause between acknowledged writes (by the
	// time each acknowledgement arrived), counting the run's start and end
	// as bounds so that a stack that never recovers shows its whole outage.
	WriteGap      time.Duration `json:"write_gap_ns"`
	WriteGapStart time.Duration `json:"write_gap_start_ns"`
	// Servers lists every postmaster that acknowledged writes, in the order
	// of their first acknowledgement.
	Servers []ServerSpan `json:"servers"`
	// NewPrimary is set when the last acknowledged write came from another
	// server than the first: the time of the first acknowledgement from
	// the final server after the last one from any other, and how long
	// after that last one it came.
	NewPrimary *Switch   `json:"new_primary,omitempty"`
	Failures   []Failure `json:"failures"`
}

// ServerSpan is one server's acknowledged writes.
type ServerSpan struct {
	Server   string        `json:"server"`
	Count    int           `json:"count"`
	FirstAck time.Duration `json:"first_ack_ns"`
	LastAck  time.Duration `json:"last_ack_ns"`
}

// Switch describes the move of acknowledged writes to a new server.
type Switch struct {
	From       string        `json:"from"`
	To         string        `json:"to"`
	LastOnOld  time.Duration `json:"last_on_old_ns"`
	FirstOnNew time.Duration `json:"first_on_new_ns"`
}

// Failure counts the attempts of one outcome, phase and category.
type Failure struct {
	Outcome  Outcome `json:"outcome"`
	Phase    Phase   `json:"phase"`
	Category string  `json:"category"`
	Count    int     `json:"count"`
}

// Summarize computes the summary of events from a run that lasted d.
func Summarize(events []Event, d time.Duration) Summary {
	s := Summary{Duration: d, Events: len(events), Outcomes: map[Outcome]int{}}
	var acks []Event
	fails := map[Failure]int{}
	for _, e := range events {
		s.Outcomes[e.Outcome]++
		if e.Outcome == Acknowledged {
			acks = append(acks, e)
			continue
		}
		fails[Failure{Outcome: e.Outcome, Phase: e.Phase, Category: e.Category}]++
	}
	for f, n := range fails {
		f.Count = n
		s.Failures = append(s.Failures, f)
	}
	sort.Slice(s.Failures, func(i, j int) bool {
		a, b := s.Failures[i], s.Failures[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.Outcome != b.Outcome {
			return a.Outcome < b.Outcome
		}
		if a.Phase != b.Phase {
			return a.Phase < b.Phase
		}
		return a.Category < b.Category
	})
	sort.SliceStable(acks, func(i, j int) bool { return acks[i].End < acks[j].End })
	s.WriteGap, s.WriteGapStart = longestGap(acks, d)
	s.Servers = servers(acks)
	s.NewPrimary = newPrimary(acks)
	return s
}

// longestGap is the longest interval between consecutive points of
// 0, the acknowledgements (sorted) and d.
func longestGap(acks []Event, d time.Duration) (time.Duration, time.Duration) {
	prev := time.Duration(0)
	var gap, start time.Duration
	for _, a := range acks {
		if a.End-prev > gap {
			gap, start = a.End-prev, prev
		}
		prev = a.End
	}
	if d-prev > gap {
		gap, start = d-prev, prev
	}
	return gap, start
}

func servers(acks []Event) []ServerSpan {
	idx := map[string]int{}
	var out []ServerSpan
	for _, a := range acks {
		i, ok := idx[a.Server]
		if !ok {
			i = len(out)
			idx[a.Server] = i
			out = append(out, ServerSpan{Server: a.Server, FirstAck: a.End})
		}
		out[i].Count++
		out[i].LastAck = a.End
	}
	return out
}

func newPrimary(acks []Event) *Switch {
	if len(acks) == 0 || acks[0].Server == acks[len(acks)-1].Server {
		return nil
	}
	final := acks[len(acks)-1].Server
	sw := &Switch{To: final}
	for _, a := range acks {
		if a.Server != final {
			sw.From, sw.LastOnOld = a.Server, a.End
		}
	}
	for _, a := range acks {
		if a.Server == final && a.End > sw.LastOnOld {
			sw.FirstOnNew = a.End
			break
		}
	}
	return sw
}
