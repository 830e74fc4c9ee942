// Package report is the text a bench run prints: the summary table, the
// latency format, and the notes comparing a run with the client's ceiling.
package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/linerate/linerate/lab"
)

// WriteSummary prints the human summary of a run: one row per operation
// with a latency column per percentile of ps (nil: lab.DefaultPercentiles),
// then errors, client cost and notes.
func WriteSummary(out io.Writer, r *lab.Result, ps lab.Percentiles) {
	if len(ps) == 0 {
		ps = lab.DefaultPercentiles
	}
	writeHeader(out, r)
	writeOps(out, r, ps)
	writeOpenLoop(out, r)
	writeFooter(out, r)
}

// writeHeader is what ran: linerate and its engine, the server, the
// workload's flags and the window.
func writeHeader(out io.Writer, r *lab.Result) {
	w := r.Workload
	fmt.Fprintf(out, "linerate %s  %s  engine %s", r.Linerate.Version, r.RunID, r.Engine.Name)
	if r.Engine.Discard != "" {
		fmt.Fprintf(out, " (%s)", r.Engine.Discard)
	}
	fmt.Fprintln(out)
	if r.Server != nil {
		fmt.Fprintf(out, "server    %s at %s", r.ServerLabel(), w.Addr())
		if t := r.Server.Config["io-threads"]; t != "" {
			fmt.Fprintf(out, "  io-threads %s", t)
		}
		fmt.Fprintln(out)
	}
	size := w.ValueSz.String()
	if s, one := w.ValueSz.Single(); one {
		size = fmt.Sprintf("%d (%s)", int64(s), s)
	}
	fmt.Fprintf(out, "workload  -s %s", size)
	if !w.Command.Multi() { // MGET and MSET have no GET:SET mix
		fmt.Fprintf(out, "  -r %s", w.Ratio)
	}
	fmt.Fprintf(out, "  -c %d  -P %d  -t %d  -n %d  --key-size %d  verify %s",
		w.Connections, w.Pipeline, w.Threads, w.Keyspace, w.KeySize, w.Verify)
	if len(w.CPUList) > 0 {
		fmt.Fprintf(out, "  --cpu-list %s", w.CPUList)
	}
	if w.Command.Multi() { // an op is a request of that many keys
		fmt.Fprintf(out, "  --command %s --keys-per-op %d", w.Command, w.KeysPerOp)
	}
	fmt.Fprintf(out, "\nwindow    %s measured of %s after %s warmup\n\n", r.Window.Measured.D().Round(1e6), r.Window.Requested, r.Window.Warmup)
}

// writeOps is the table: a row per operation, a latency column per
// percentile of ps.
func writeOps(out io.Writer, r *lab.Result, ps lab.Percentiles) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "op\tGbps\tops/s\t")
	for _, p := range ps {
		fmt.Fprint(tw, lab.PercentileName(p)+"\t")
	}
	fmt.Fprintln(tw, "max\tmean\tTTFB p99\terrors\t")
	for _, op := range lab.AllOps {
		o, found := r.Ops[op]
		if !found {
			continue
		}
		ttfb := "-"
		if o.TTFB != nil && o.TTFB.Count > 0 {
			ttfb = FormatUs(o.TTFB.P99)
		}
		var errs uint64
		for _, n := range o.Errors {
			errs += n
		}
		l := o.Latency
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f\t", op, o.Gbps, o.OpsPerSec)
		for _, p := range ps {
			v, err := l.At(p)
			if err != nil {
				v = 0 // printed as "-": the record has no histogram to read it from
			}
			fmt.Fprint(tw, FormatUs(v)+"\t")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t\n", FormatUs(l.Max), FormatUs(l.Mean), ttfb, errs)
	}
	tw.Flush()
}

// writeFooter is the errors, the misses, the client's cost, the notes and
// why the run stopped.
func writeFooter(out io.Writer, r *lab.Result) {
	if len(r.Errors) > 0 {
		kinds := make([]string, 0, len(r.Errors))
		for k, n := range r.Errors {
			kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		}
		sort.Strings(kinds)
		fmt.Fprintf(out, "\nerrors    %s (whole run, all phases)\n", strings.Join(kinds, " "))
	}
	if g := r.Ops[lab.OpGet]; g != nil && g.Misses > 0 {
		fmt.Fprintf(out, "misses    %d GETs found no key (not counted as throughput)", g.Misses)
		if g.Ops == 0 {
			fmt.Fprint(out, "; every GET missed: write the keys first with --prefill")
		}
		fmt.Fprintln(out)
	}
	c := r.Client
	fmt.Fprintf(out, "\nclient    %.2f CPU-s (%.2f user, %.2f sys)  %.3f CPU-s/GB  %.2f minor faults/op",
		c.ProcessUserSec+c.ProcessSysSec, c.ProcessUserSec, c.ProcessSysSec, c.CPUSecPerGB, c.MinorFaultsPerOp)
	if len(c.Workers) > 0 {
		fmt.Fprintf(out, "  busiest worker %.0f%%", c.MaxWorkerBusy*100)
	}
	fmt.Fprintln(out)
	for _, n := range r.Notes {
		fmt.Fprintf(out, "note      %s\n", n)
	}
	fmt.Fprintf(out, "stop      %s", r.Stop.Reason)
	if r.Stop.Error != "" {
		fmt.Fprintf(out, ": %s", r.Stop.Error)
	}
	fmt.Fprintln(out)
}

// FormatUs prints microseconds in the unit a reader expects: 850us, 2.4ms, 1.02s.
func FormatUs(us float64) string {
	switch {
	case us <= 0:
		return "-"
	case us < 1000:
		return fmt.Sprintf("%.0fus", us)
	case us < 10_000:
		return fmt.Sprintf("%.2fms", us/1000)
	case us < 1_000_000:
		return fmt.Sprintf("%.1fms", us/1000)
	}
	return fmt.Sprintf("%.2fs", us/1e6)
}

// CeilingNotes compares a run with a run of the same operations against
// `linerate sink`, the client's own ceiling on this host pair.
func CeilingNotes(r, sink *lab.Result) []string {
	var notes []string
	if sink.Workload.ValueSz.String() != r.Workload.ValueSz.String() {
		return []string{fmt.Sprintf("ceiling: not compared: the sink record is of %s values, this run of %s; calibrate with the same -s",
			sink.Workload.ValueSz, r.Workload.ValueSz)}
	}
	for op, o := range r.Ops {
		s, found := sink.Ops[op]
		if !found || s.Gbps <= 0 {
			notes = append(notes, fmt.Sprintf("ceiling: the sink record has no %s figure to compare with", op))
			continue
		}
		if o.Ops == 0 {
			notes = append(notes, fmt.Sprintf("ceiling: %s completed no request: nothing to compare", op))
			continue
		}
		frac := o.Gbps / s.Gbps
		verdict := "well below the client's ceiling: the server (or link) is the limit"
		if frac >= 0.9 {
			verdict = "near the client's ceiling: the figure may be the client's, not the server's"
		}
		notes = append(notes, fmt.Sprintf("ceiling: %s at %.0f%% of %.2f Gbps measured against linerate sink (%s values): %s",
			op, frac*100, s.Gbps, sink.Workload.ValueSz, verdict))
	}
	sort.Strings(notes)
	return notes
}
