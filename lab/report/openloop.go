package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/linerate/linerate/lab"
)

// writeOpenLoop prints what a paced run adds to the summary: the pacing,
// service time per op, a ramp's steps and knee, a mix's size classes and
// the probe. Nothing for a closed-loop run of one size.
func writeOpenLoop(out io.Writer, r *lab.Result) {
	writePacing(out, r)
	writeSteps(out, r)
	writeSizes(out, r)
	writeProbe(out, r)
}

// writePacing is the pacing of an open-loop run and each op's service time.
func writePacing(out io.Writer, r *lab.Result) {
	if ol := r.OpenLoop; ol != nil {
		verdict := "sustained"
		if !ol.Sustainable {
			verdict = "NOT SUSTAINABLE"
		}
		fmt.Fprintf(out, "\nopen loop %s arrivals: offered %.1f/s, achieved %.1f/s, lateness slope %.4g s/s; %s\n",
			ol.Arrival, ol.Offered, ol.Achieved, ol.LatenessSlope, verdict)
		fmt.Fprintf(out, "          due %d: %d completed, %d failed, %d dropped, %d unsent; %d of %d sent late (> %s)\n",
			ol.Due, ol.Completed, ol.Failed, ol.Dropped, ol.Unsent, ol.Late, ol.Sent, lab.LateAfter)
		for _, why := range ol.Why() {
			fmt.Fprintf(out, "          not sustained: %s\n", why)
		}
		for _, op := range lab.AllOps {
			if o := r.Ops[op]; o != nil && o.Service != nil && o.Service.Count > 0 {
				fmt.Fprintf(out, "          %s latency from the intended send p99 %s; service (from the real send) p50 %s p99 %s\n",
					op, FormatUs(o.Latency.P99), FormatUs(o.Service.P50), FormatUs(o.Service.P99))
			}
		}
	}
}

// writeSteps is a ramp's steps and its knee.
func writeSteps(out io.Writer, r *lab.Result) {
	if len(r.Steps) > 0 {
		fmt.Fprintln(out)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "step\toffered/s\tachieved/s\tGbps\tp50\tp95\tp99\tservice p99\tlate\tdropped\tunsent\tslope\terrors\t")
		for _, s := range r.Steps {
			p50, p95, p99, svc := "-", "-", "-", "-"
			if s.Latency != nil {
				p50, p95, p99 = FormatUs(s.Latency.P50), FormatUs(s.Latency.P95), FormatUs(s.Latency.P99)
			}
			if s.Service != nil {
				svc = FormatUs(s.Service.P99)
			}
			fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%.2f\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%.4g\t%d\t\n", s.Step, s.Offered, s.Achieved, s.Gbps, p50, p95, p99, svc, s.Late, s.Dropped, s.Unsent, s.LatenessSlope, s.Errors)
		}
		tw.Flush()
		if note := lab.StepsEdgeNote(r.Steps); note != "" {
			fmt.Fprintf(out, "edge bias %s\n", note)
		}
		if k := r.Knee; k != nil {
			floor := "no step of the first third has a p99"
			if k.FloorStep >= 0 && k.FloorP99 > 0 { // records before the floor have neither
				floor = fmt.Sprintf("floor step %d (p99 %s, p50 %s)", k.FloorStep, FormatUs(k.FloorP99), FormatUs(k.FloorP50))
			}
			fmt.Fprintf(out, "knee      step %d at %.1f/s by %s: p99 %.2fx and p50 %.2fx the floor's, achieved %.0f%% of offered, lateness slope %.4g s/s; %s\n",
				k.Step, k.Offered, k.By(), k.P99Ratio, k.P50Ratio, k.AchievedRatio*100, k.LatenessSlope, floor)
		} else {
			fmt.Fprintln(out, "knee      none: the server kept up with every step")
		}
	}
}

// writeSizes is a size mix's classes and each op's figures per class.
func writeSizes(out io.Writer, r *lab.Result) {
	if m := r.SizeMix; m != nil {
		parts := make([]string, len(m.Classes))
		for i, c := range m.Classes {
			parts[i] = fmt.Sprintf("%s %d (%.0f%%, asked %.0f%%)", c.Class, c.Keys, 100*c.KeyShare, 100*c.AskedKeyShare)
		}
		fmt.Fprintf(out, "\nsize mix  keys per class over %d keys: %s; mean %s, asked %s\n",
			m.CountedKeys, strings.Join(parts, ", "), lab.FormatBytes(m.Mean), lab.FormatBytes(m.AskedMean))
	}
	for _, op := range lab.AllOps {
		o := r.Ops[op]
		if o == nil || len(o.Sizes) == 0 {
			continue
		}
		fmt.Fprintf(out, "\n%s per size class\n", op)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "class\tops\tGbps\tp50\tp99\terrors\t")
		for _, s := range o.Sizes {
			p50, p99 := "-", "-"
			if s.Latency != nil {
				p50, p99 = FormatUs(s.Latency.P50), FormatUs(s.Latency.P99)
			}
			fmt.Fprintf(tw, "%s\t%d\t%.2f\t%s\t%s\t%d\t\n", s.Class, s.Ops, s.Gbps, p50, p99, s.Errors)
		}
		tw.Flush()
	}
}

// writeProbe is the probe's latency alone and under the load.
func writeProbe(out io.Writer, r *lab.Result) {
	if p := r.Probe; p != nil {
		added := signedUs(p.AddedP99)
		if p.NoEffect {
			added = "no measurable effect"
		}
		fmt.Fprintf(out, "\nprobe     %s: p99 alone %s (%d GETs in %s), under load %s: added %s (band %s to %s); %d GETs, %d late, %d dropped, %d errors\n",
			p.Probe, FormatUs(p.Idle.P99), p.Idle.Count, p.IdleLength, FormatUs(p.Latency.P99), added, signedUs(p.AddedLow), signedUs(p.AddedHigh),
			p.Ops, p.Late, p.Dropped, p.Errors)
	}
}

// signedUs is FormatUs for a difference, which can be negative or zero.
func signedUs(us float64) string {
	switch {
	case us < 0:
		return "-" + FormatUs(-us)
	case us == 0:
		return "0us"
	}
	return "+" + FormatUs(us)
}
