package sweeps

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WritePlan prints a plan for people: the versions, the run order by block
// and cell, and the estimate with what it assumed.
func WritePlan(out io.Writer, p *Plan) error {
	c := p.Campaign
	var b strings.Builder
	fmt.Fprintf(&b, "campaign %s (%s)\n", c.Name, c.File)
	if c.Description != "" {
		fmt.Fprintf(&b, "  %s\n", strings.TrimSpace(c.Description))
	}
	fmt.Fprintf(&b, "provider %s", c.Provider.Kind)
	if n := c.ClientCount(); n > 1 {
		fmt.Fprintf(&b, ", %d client hosts (connections are the total)", n)
	}
	if c.Tuning != "" {
		fmt.Fprintf(&b, ", tuning profile %s", c.Tuning)
	}
	fmt.Fprintf(&b, ", order %s, seed %d, %d repetition(s)\n", c.Order, c.Seed, c.Repetitions)
	if v := c.VariedAxes(); len(v) > 0 {
		fmt.Fprintf(&b, "varies: versions, %s\n", strings.Join(v, ", "))
	}
	fmt.Fprintf(&b, "\nversions:\n")
	tw := tabwriter.NewWriter(&b, 2, 8, 2, ' ', 0)
	for i, v := range p.Versions {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", versionName(i), v.Segment, versionDetail(v.Spec))
	}
	tw.Flush()
	fmt.Fprintf(&b, "\nrun order (one server start per block):\n")
	tw = tabwriter.NewWriter(&b, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "  #\tblock\tcell\test.\n")
	for _, cell := range p.Cells {
		fmt.Fprintf(tw, "  %d\t%d %s\t%s\t%s\n", cell.Index+1, cell.Block+1, versionName(cell.Version), cell.ID, cell.Estimate.Round(100*time.Millisecond))
	}
	tw.Flush()
	var seq []string
	for _, bl := range p.Blocks {
		seq = append(seq, versionName(bl.Version))
	}
	fmt.Fprintf(&b, "\nblock order: %s\n", strings.Join(seq, " "))
	e := p.Estimate
	fmt.Fprintf(&b, "cells: %d in %d blocks\n", len(p.Cells), len(p.Blocks))
	fmt.Fprintf(&b, "estimated wall time: %s (measuring %s, prefill %s, %d server starts at %s, %s per cell overhead)\n",
		e.Total.Round(time.Second), e.Measuring.Round(time.Second), e.Prefill.Round(time.Second),
		e.ServerStarts, e.Params.ServerStart, e.Params.CellOverhead)
	if e.Calibration > 0 {
		fmt.Fprintf(&b, "link calibration first: %s (1 flow and %d flows, GET and SET, %s each)\n",
			e.Calibration.Round(time.Second), p.Campaign.CalibrationConnections(), p.Campaign.Calibrate.Duration)
	}
	for _, w := range p.EdgeWarnings() {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// versionName is A, B, … Z, AA, … for block sequences.
func versionName(i int) string {
	s := ""
	for i >= 0 {
		s = string(rune('A'+i%26)) + s
		i = i/26 - 1
	}
	return s
}

func versionDetail(v VersionSpec) string {
	parts := []string{v.Selector()}
	if v.Runtime != "" {
		parts = append(parts, "runtime "+v.Runtime)
	}
	for _, k := range sortedKeys(v.Env) {
		parts = append(parts, k+"="+v.Env[k])
	}
	s := v.Server
	if s.IOThreads > 0 {
		parts = append(parts, fmt.Sprintf("io-threads %d", s.IOThreads))
	}
	if s.MaxMemory != "" {
		parts = append(parts, "maxmemory "+s.MaxMemory)
	}
	if len(s.CPUs) > 0 {
		parts = append(parts, "cpus "+s.CPUs.String())
	}
	if len(s.Args) > 0 {
		q := make([]string, len(s.Args))
		for i, a := range s.Args {
			if a == "" || strings.ContainsAny(a, " \t'\"") {
				a = "'" + a + "'"
			}
			q[i] = a
		}
		parts = append(parts, strings.Join(q, " "))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
