package lab

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// Probe is --probe SIZE@RATE (e.g. 100B@500): small GETs sent open loop at
// RATE on connections of their own beside the main load, to measure what
// the main load costs other requests. Its keys are ProbeKeys keys of SIZE
// after the main keyspace (ids Keyspace to Keyspace+ProbeKeys-1), written
// by the prefill. The probe first runs alone (its idle latency, over at
// least ProbeIdleSamples GETs when MaxProbeIdle allows: ProbePhases); then
// the main load runs beside it, its own warmup first.
type Probe struct {
	Size Size `json:"size"`
	Rate Rate `json:"rate"`
}

// The probe's fixed shape: enough keys and connections that a probe
// request rarely waits for another probe request, few enough to cost the
// server nothing.
const (
	ProbeKeys        = 16
	ProbeConnections = 4
	// MinProbeWarmup is the shortest --warmup a probe takes: its first
	// half measures the probe alone.
	MinProbeWarmup = 2 * time.Second
	// ProbeIdleSamples is how many GETs the probe's idle phase plans to
	// complete alone: a p99 from n samples rests on its n/100 slowest, and
	// its 95 % order-statistic band (P99Interval) is then about ±6 ranks
	// around the 990th, where from 150 samples it spans the top three.
	ProbeIdleSamples = 1000
	// MaxProbeIdle bounds the idle phase: a probe too slow to reach
	// ProbeIdleSamples in it says so (ProbeResult.IdleShort).
	MaxProbeIdle = 30 * time.Second
)

// ProbePhases is a probe run's warmup: the probe alone from 0 (its first
// quarter-warmup settles its connections), its idle phase from idleStart
// (warmup/4) to mainStart, long enough for ProbeIdleSamples GETs with a
// tenth to spare (poisson arrivals, failures) but at least warmup/4 and at
// most MaxProbeIdle, then the main load's own warmup of warmup/2 until
// warmupEnd. planned is how many probe GETs the idle phase's schedule
// holds; fewer than ProbeIdleSamples when MaxProbeIdle cut it. Without a
// probe: everything 0 but warmupEnd, the warmup.
func (w Workload) ProbePhases() (idleStart, mainStart, warmupEnd time.Duration, planned float64) {
	warm := w.Warmup.D()
	ops, err := w.Probe.OpsPerSec()
	if w.Probe.IsZero() || err != nil || ops <= 0 {
		return 0, 0, warm, 0
	}
	need := time.Duration(math.Ceil(1.1 * ProbeIdleSamples / ops * float64(time.Second)))
	idle := min(max(warm/4, need), max(warm/4, MaxProbeIdle))
	idleStart = warm / 4
	mainStart = idleStart + idle
	return idleStart, mainStart, mainStart + warm/2, ops * idle.Seconds()
}

// ProbeForms is the help text for Probe.
const ProbeForms = "SIZE@RATE: GETs of SIZE at RATE requests/s (or a bit rate) on " +
	"4 connections of their own, e.g. 100B@500"

// ParseProbe reads --probe.
func ParseProbe(s string) (Probe, error) {
	bad := func(format string, a ...any) (Probe, error) {
		return Probe{}, fmt.Errorf("probe %s: %s", quoteShort(s), fmt.Sprintf(format, a...))
	}
	if len(s) > maxFlagLen {
		return bad("longer than %d characters; use %s", maxFlagLen, ProbeForms)
	}
	sz, rt, ok := strings.Cut(strings.TrimSpace(s), "@")
	if !ok {
		return bad("want SIZE@RATE; use %s", ProbeForms)
	}
	size, err := parseMixSize(sz)
	if err != nil {
		return bad("SIZE: %v", err)
	}
	rate, err := ParseRate(rt)
	if err != nil {
		return bad("RATE: %v", err)
	}
	p := Probe{Size: size, Rate: rate}
	if err := p.Validate(); err != nil {
		return bad("%v", err)
	}
	return p, nil
}

// Validate says whether the probe is one linerate can run, on its own; the
// bounds between fields are lab/fields'.
func (p Probe) Validate() error {
	if p.Size < 1 || p.Size > MaxValueSize {
		return fmt.Errorf("SIZE %d bytes is outside 1 B - %s", int64(p.Size), MaxValueSize)
	}
	if _, err := p.Rate.OpsPerSec(float64(p.Size)); err != nil {
		return fmt.Errorf("RATE: %w", err)
	}
	return nil
}

// IsZero says no probe was given.
func (p Probe) IsZero() bool { return p == Probe{} }

// OpsPerSec is the probe's rate in requests per second (a bit rate
// converted with its size).
func (p Probe) OpsPerSec() (float64, error) { return p.Rate.OpsPerSec(float64(p.Size)) }

// String prints the probe as ParseProbe reads it: 100B@500.
func (p Probe) String() string {
	if p.IsZero() {
		return ""
	}
	return p.Size.String() + "@" + p.Rate.String()
}

// Set and Type make Probe a flag value.
func (p *Probe) Set(v string) error {
	q, err := ParseProbe(v)
	if err != nil {
		return err
	}
	*p = q
	return nil
}

func (p *Probe) Type() string { return "SIZE@RATE" }

// UnmarshalJSON reads the object Probe marshals to, or a string as --probe
// takes it, and holds either to the same bounds: records are untrusted.
func (p *Probe) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return p.Set(s)
	}
	type plain Probe
	var q plain
	if err := json.Unmarshal(b, &q); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if Probe(q).IsZero() {
		*p = Probe{}
		return nil
	}
	if err := Probe(q).Validate(); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	*p = Probe(q)
	return nil
}
