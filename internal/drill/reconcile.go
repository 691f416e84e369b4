package drill

// Reconciliation compares what the client was told with what the primary
// holds afterwards.
type Reconciliation struct {
	Done             bool   `json:"done"`
	Error            string `json:"error,omitempty"`
	Acknowledged     int    `json:"acknowledged"`
	AckMissing       int    `json:"acknowledged_missing"`
	Unknown          int    `json:"unknown"`
	UnknownCommitted int    `json:"unknown_committed"`
	UnknownAbsent    int    `json:"unknown_absent"`
	// Duplicates: tokens stored more than once (whatever their outcome).
	Duplicates int `json:"duplicates"`
	// Unreconciled: unknown outcomes that could not be looked up.
	Unreconciled int `json:"unreconciled"`
	// FailedCommitted: not_sent or rejected attempts whose token is stored
	// anyway; the classification was wrong, so it counts as a violation.
	FailedCommitted int `json:"failed_committed"`
	// Foreign: stored tokens this run never issued.
	Foreign int `json:"foreign"`
	// MissingTokens names the first maxListed acknowledged-missing tokens,
	// so that their events (server, time) can be looked up.
	MissingTokens []string `json:"missing_tokens,omitempty"`
}

const maxListed = 100

// Violations is the number of findings that must be zero in a correct
// stack: acknowledged writes lost, duplicates, unknowns left unresolved,
// failures that committed, and rows nobody wrote.
func (r Reconciliation) Violations() int {
	return r.AckMissing + r.Duplicates + r.Unreconciled + r.FailedCommitted + r.Foreign
}

// Reconcile matches events against stored, the number of rows per token
// read from the primary; stored == nil means the lookup failed (lookupErr
// says why), so every unknown stays unreconciled and nothing else is
// judged.
func Reconcile(events []Event, stored map[string]int, lookupErr error) Reconciliation {
	var r Reconciliation
	for _, e := range events {
		switch e.Outcome {
		case Acknowledged:
			r.Acknowledged++
		case Unknown:
			r.Unknown++
		}
	}
	if stored == nil {
		r.Unreconciled = r.Unknown
		if lookupErr != nil {
			r.Error = lookupErr.Error()
		}
		return r
	}
	r.Done = true
	issued := make(map[string]bool, len(events))
	for _, e := range events {
		issued[e.Token] = true
		n := stored[e.Token]
		if n > 1 {
			r.Duplicates++
		}
		switch e.Outcome {
		case Acknowledged:
			if n == 0 {
				r.AckMissing++
				if len(r.MissingTokens) < maxListed {
					r.MissingTokens = append(r.MissingTokens, e.Token)
				}
			}
		case Unknown:
			if n == 0 {
				r.UnknownAbsent++
			} else {
				r.UnknownCommitted++
			}
		default:
			if n > 0 {
				r.FailedCommitted++
			}
		}
	}
	for tok := range stored {
		if !issued[tok] {
			r.Foreign++
		}
	}
	return r
}
