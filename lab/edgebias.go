package lab

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// EdgeFraction is the share of its window a request may last before the
// window's figures carry an edge bias: requests are counted whole in the
// window they complete in, so those begun in the warmup add to it and
// those running at its end are left out. At a tenth the bias stays within
// a few per cent (make demo's 1-16 MiB cells: within 3 %); past it, its
// 64 MiB cells (max 1-2 s in 4 s windows) overstated GET's ops/s by up to
// a quarter.
const EdgeFraction = 0.1

// EdgeBias is one op of a record whose requests were too long for its
// window: By is the latency that passed EdgeFraction of it ("p99", or
// "max" when only the longest did), Needs the shortest window (whole
// seconds) that holds the longest request to EdgeFraction.
type EdgeBias struct {
	Op        Op       `json:"op"`
	By        string   `json:"by"`
	LatencyUs float64  `json:"latency_us"`
	Window    Duration `json:"window"`
	Needs     Duration `json:"needs"`
}

// MarkEdgeBias finds the ops whose p99 or max latency is more than
// EdgeFraction of the measured window, records them in EdgeBias and says
// so in a note each: the figures to distrust and the -d that would fix
// them. A record without a window or latencies is left as it is.
func (r *Result) MarkEdgeBias() {
	r.EdgeBias = EdgeBiasOf(r)
	for _, e := range r.EdgeBias {
		r.Notes = append(r.Notes, e.Note())
	}
}

// EdgeBiasOf lists r's edge-biased ops in AllOps order.
func EdgeBiasOf(r *Result) []EdgeBias {
	win := r.Window.Measured.D()
	if win <= 0 {
		return nil
	}
	limit := EdgeFraction * float64(win.Microseconds())
	var out []EdgeBias
	for _, op := range AllOps {
		o := r.Ops[op]
		if o == nil || o.Latency.Count == 0 || o.Latency.Max <= limit {
			continue
		}
		e := EdgeBias{Op: op, By: "max", LatencyUs: o.Latency.Max, Window: r.Window.Measured}
		if o.Latency.P99 > limit {
			e.By, e.LatencyUs = "p99", o.Latency.P99
		}
		e.Needs = WindowFor(time.Duration(o.Latency.Max * 1e3))
		out = append(out, e)
	}
	return out
}

// Note is the record's and the summary's line for e.
func (e EdgeBias) Note() string {
	return fmt.Sprintf("%s: %s latency %s is %.0f%% of the %s window: requests begun in the warmup count whole in it, so its ops/s and Gbps (and mean latency) carry an edge bias; -d %s or longer holds the longest request to %.0f%%",
		e.Op, e.By, time.Duration(e.LatencyUs*1e3).Round(time.Millisecond), 100*e.LatencyUs/float64(e.Window.D().Microseconds()),
		e.Window.D().Round(time.Millisecond), e.Needs, 100*EdgeFraction)
}

// WindowFor is the shortest window, in whole seconds, that holds a
// request of latency to EdgeFraction of it.
func WindowFor(latency time.Duration) Duration {
	secs := math.Ceil(latency.Seconds() / EdgeFraction)
	return Duration(time.Duration(secs) * time.Second)
}

// StepEdgeBias is a ramp step whose requests were long for the step: its
// p99 latency (from the intended send time; a step keeps no max) is more
// than EdgeFraction of the step's length, so its requests ran on into the
// next step and its figures mix the two steps' loads. Needs is the
// shortest step length (whole seconds) that holds that p99 to
// EdgeFraction.
type StepEdgeBias struct {
	P99Us float64  `json:"p99_us"`
	Needs Duration `json:"needs"`
}

// StepEdgeBiasOf judges one step as EdgeBiasOf judges a window: nil when
// its p99 is within EdgeFraction of its length, or it has neither.
func StepEdgeBiasOf(s StepResult) *StepEdgeBias {
	if s.Length <= 0 || s.Latency == nil || s.Latency.Count == 0 || s.Latency.P99 <= EdgeFraction*float64(s.Length.D().Microseconds()) {
		return nil
	}
	return &StepEdgeBias{P99Us: s.Latency.P99, Needs: WindowFor(time.Duration(s.Latency.P99 * 1e3))}
}

// StepsEdgeNote is the summary's line for a ramp's edge-biased steps:
// which, and the step length that would hold the longest p99 among them
// to EdgeFraction; empty when no step is.
func StepsEdgeNote(steps []StepResult) string {
	var which []string
	var needs, length Duration
	var longest float64
	for _, s := range steps {
		if e := StepEdgeBiasOf(s); e != nil {
			which = append(which, strconv.Itoa(s.Step))
			needs, length, longest = max(needs, e.Needs), s.Length, max(longest, e.P99Us)
		}
	}
	if len(which) == 0 {
		return ""
	}
	return fmt.Sprintf("step%s %s: p99 more than %.0f%% of the %s step (up to %s): their requests ran on into the next step, so their figures mix two steps' loads; steps of %s or longer (--ramp FROM:TO:STEPS:%s) hold them to %.0f%%",
		plural(len(which)), strings.Join(which, ", "), 100*EdgeFraction, length, time.Duration(longest*1e3).Round(time.Millisecond), needs, needs, 100*EdgeFraction)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
