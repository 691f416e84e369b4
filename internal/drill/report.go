package drill

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteJSON writes r as indented JSON; events are left out unless withEvents.
func (r *Report) WriteJSON(w io.Writer, withEvents bool) error {
	out := *r
	if !withEvents {
		out.Events = nil
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

// WriteTable writes the report for people: the seed 003 counters, the write
// gap, the servers that acknowledged writes and the failure categories.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	s, rc := r.Summary, r.Reconciliation
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	row("table", r.Table)
	row("workers", r.Workers)
	row("duration", secs(s.Duration))
	row("events", s.Events)
	for _, o := range []Outcome{Acknowledged, NotSent, Rejected, Unknown} {
		row(string(o), s.Outcomes[o])
	}
	if rc.Done {
		row("unknown committed", rc.UnknownCommitted)
		row("unknown absent", rc.UnknownAbsent)
		row("acknowledged missing", rc.AckMissing)
		row("duplicates", rc.Duplicates)
		row("failed but committed", rc.FailedCommitted)
		row("foreign rows", rc.Foreign)
	} else {
		row("reconciliation", "FAILED: "+rc.Error)
	}
	row("unreconciled", rc.Unreconciled)
	row("write gap", fmt.Sprintf("%s (from %s)", secs(s.WriteGap), secs(s.WriteGapStart)))
	if np := s.NewPrimary; np != nil {
		row("new primary", np.To)
		row("last ack on old", secs(np.LastOnOld))
		row("first ack on new", fmt.Sprintf("%s (+%s)", secs(np.FirstOnNew), secs(np.FirstOnNew-np.LastOnOld)))
	}
	if r.DropError != "" {
		row("drop table", "FAILED: "+r.DropError)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "server\tacks\tfirst\tlast")
	for _, sv := range s.Servers {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", sv.Server, sv.Count, secs(sv.FirstAck), secs(sv.LastAck))
	}
	if len(s.Failures) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "outcome\tphase\tcategory\tcount")
		for _, f := range s.Failures {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", f.Outcome, f.Phase, f.Category, f.Count)
		}
	}
	return tw.Flush()
}
