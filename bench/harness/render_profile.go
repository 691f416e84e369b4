package harness

import (
	"fmt"
	"strings"
)

// renderSyscalls is section 5: strace -c per transaction.
func renderSyscalls(b *strings.Builder, r Report) {
	fmt.Fprintf(b, "## 5. Syscalls per transaction\n\n")
	fmt.Fprintf(b, "`strace -c -f -p <pooler pid>` (every thread) attached while one `pgbench -b select-only -M <mode> -c %d -t %d` runs through the same poolers as section 1, after all TPS runs: the transaction count is exact, and the calls are divided by it (the run's %d logins included). strace stops the pooler at every system call, so these runs are much slower and their TPS is not reported; the counts are what matters. Errors of read/recvfrom on these non-blocking sockets are EAGAIN: a read that found nothing and went back to epoll.\n\n",
		profileClients, r.Settings.ProfileTxs, profileClients)
	var rows, failed []string
	for _, s := range r.Syscalls {
		if s.Err != "" {
			failed = append(failed, fmt.Sprintf("- %s, %s: %s", s.Pooler, s.Case, cell(s.Err)))
			continue
		}
		row := fmt.Sprintf("| %s | %s | %d | %.2f | %.2f", s.Pooler, s.Case.Mode, s.Txs, s.PerTx(syscallGroups[0].name), s.ReadErrorsPerTx())
		all := s.PerTx("other")
		for i, g := range syscallGroups {
			all += s.PerTx(g.name)
			if i > 0 {
				row += fmt.Sprintf(" | %.2f", s.PerTx(g.name))
			}
		}
		rows = append(rows, row+fmt.Sprintf(" | %.2f | %.2f |", s.PerTx("other"), all))
	}
	writeTable(b, "| pooler | -M | transactions | read/recvfrom | of them EAGAIN | write/sendto | epoll* | futex | nanosleep | other | all |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n", rows)
	writeNotMeasured(b, failed, len(r.Syscalls))
}

// writeTable writes header and rows, nothing when there are no rows.
func writeTable(b *strings.Builder, header string, rows []string) {
	if len(rows) > 0 {
		b.WriteString(header + strings.Join(rows, "\n") + "\n")
	}
}

// writeNotMeasured ends a section with the runs that gave nothing and why
// (or says the section did not run at all).
func writeNotMeasured(b *strings.Builder, failed []string, runs int) {
	b.WriteString("\n")
	if runs == 0 {
		b.WriteString("Not measured in this run.\n\n")
		return
	}
	if len(failed) > 0 {
		b.WriteString("Not measured:\n\n" + strings.Join(failed, "\n") + "\n\n")
	}
}

// renderProfiles is section 6: perf samples by kernel and user space and
// the symbols with the most self time.
func renderProfiles(b *strings.Builder, r Report) {
	fmt.Fprintf(b, "## 6. Where the CPU goes\n\n")
	fmt.Fprintf(b, "`perf record -e cpu-clock -g -p <pooler pid>` (a software clock at perf's default 4000 Hz: this machine gives no hardware counters) for exactly as long as one `pgbench -b select-only -M simple -c %d -t %d` runs (perf runs pgbench as its workload), after all TPS runs; `perf report --no-children --sort sym` gives the self time per symbol. CPU per transaction is the pooler's utime + stime over that run divided by its transactions, split into kernel and user by the share of samples in each; sampling (with -g, a call chain per sample) costs the pooler a little, so it is somewhat above section 1's figure. A software clock cannot interrupt the kernel while it runs with interrupts off, so those samples land where interrupts come back on: `_raw_spin_unlock_irqrestore` and `finish_task_switch` stand for the scheduler's and the network stack's work done with interrupts off, not for time spent in those functions themselves.\n\n",
		profileClients, r.Settings.ProfileTxs)
	var ok []ProfileResult
	var rows, failed []string
	for _, p := range r.Profiles {
		if p.Err != "" {
			failed = append(failed, fmt.Sprintf("- %s, %s: %s", p.Pooler, p.Case, cell(p.Err)))
			continue
		}
		ok = append(ok, p)
		total, kernel, user := p.CPUPerTx()
		rows = append(rows, fmt.Sprintf("| %s | %d | %d | %.0f%% | %s | %s | %s |", p.Pooler, p.Txs, p.Perf.Samples,
			100*p.Perf.KernelShare(), micros(total), micros(kernel), micros(user)))
	}
	writeTable(b, "| pooler | transactions | samples | kernel share | µs CPU/tx | kernel µs/tx | user µs/tx |\n|---|--:|--:|--:|--:|--:|--:|\n", rows)
	writeNotMeasured(b, failed, len(r.Profiles))
	if len(ok) == 0 {
		return
	}
	fmt.Fprintf(b, "Top %d symbols by self time, share of the pooler's samples ([k] kernel, [.] user space; an address instead of a name is a symbol the binary does not carry):\n\n| # |", profileTopSymbols)
	for _, p := range ok {
		fmt.Fprintf(b, " %s | %% |", p.Pooler)
	}
	b.WriteString("\n|--:|" + strings.Repeat("---|--:|", len(ok)) + "\n")
	for i := range profileTopSymbols {
		fmt.Fprintf(b, "| %d |", i+1)
		for _, p := range ok {
			if i >= len(p.Perf.Top) {
				b.WriteString("  |  |")
				continue
			}
			s := p.Perf.Top[i]
			mode := "[.]"
			if s.Kernel {
				mode = "[k]"
			}
			fmt.Fprintf(b, " %s `%s` | %.1f |", mode, cell(s.Name), 100*float64(s.Samples)/float64(p.Perf.Samples))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}
