package lab

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Ramp is --ramp FROM:TO:STEPS:STEP_DURATION (e.g. 50:800:8:10s or
// 1Gbps:20Gbps:8:10s): STEPS steps of STEP_DURATION each, step i offered
// FROM + (TO-FROM)·i/(STEPS-1), so the first step runs at FROM and the
// last at TO; the load stops after the last step. FROM and TO are Rates in
// the same unit (both requests/s or both bit rates). TO may be below FROM.
type Ramp struct {
	From  Rate     `json:"from"`
	To    Rate     `json:"to"`
	Steps int      `json:"steps"`
	Step  Duration `json:"step"`
}

// Bounds on a ramp. A step shorter than a second has too few requests at a
// low rate for a p99; more than 1000 steps is a typo (the record keeps one
// entry per step); the whole ramp is held to MaxDuration like -d.
const (
	MinRampSteps = 2
	MaxRampSteps = 1000
	MinRampStep  = time.Second
)

// RampForms is the help text for Ramp.
const RampForms = "FROM:TO:STEPS:STEP_DURATION, rates in requests/s or bit rates (50:800:8:10s, 1Gbps:20Gbps:8:10s); 2-1000 steps of at least 1s"

// maxFlagLen bounds the text of a ramp or a size mix before any parsing:
// a real one is a few dozen characters.
const maxFlagLen = 4096

// ParseRamp reads --ramp. Each error names the part that is wrong.
func ParseRamp(s string) (Ramp, error) {
	bad := func(format string, a ...any) (Ramp, error) {
		return Ramp{}, fmt.Errorf("ramp %s: %s", quoteShort(s), fmt.Sprintf(format, a...))
	}
	if len(s) > maxFlagLen {
		return bad("longer than %d characters; use %s", maxFlagLen, RampForms)
	}
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 4 {
		return bad("want four parts; use %s", RampForms)
	}
	var r Ramp
	var err error
	if r.From, err = ParseRate(parts[0]); err != nil {
		return bad("FROM: %v", err)
	}
	if r.To, err = ParseRate(parts[1]); err != nil {
		return bad("TO: %v", err)
	}
	if r.Steps, err = strconv.Atoi(strings.TrimSpace(parts[2])); err != nil {
		return bad("STEPS %s is not a whole number; use %d-%d", quoteShort(parts[2]), MinRampSteps, MaxRampSteps)
	}
	d, err := time.ParseDuration(strings.TrimSpace(parts[3]))
	if err != nil {
		return bad("STEP_DURATION %s: use a Go duration such as 10s or 1m", quoteShort(parts[3]))
	}
	r.Step = Duration(d)
	if err := r.Validate(); err != nil {
		return bad("%v", err)
	}
	return r, nil
}

// Validate says whether the ramp is one linerate can run, on its own; the
// bounds between fields are lab/fields'.
func (r Ramp) Validate() error {
	switch {
	case r.From.Validate() != nil:
		return fmt.Errorf("FROM: %w", r.From.Validate())
	case r.To.Validate() != nil:
		return fmt.Errorf("TO: %w", r.To.Validate())
	case r.From.IsBits() != r.To.IsBits():
		return fmt.Errorf("FROM %s and TO %s: give both in requests/s or both as bit rates", r.From, r.To)
	case r.Steps < MinRampSteps || r.Steps > MaxRampSteps:
		return fmt.Errorf("STEPS %d: use %d-%d (one rate is --rate)", r.Steps, MinRampSteps, MaxRampSteps)
	case r.Step.D() < MinRampStep || r.Step.D() > MaxDuration:
		return fmt.Errorf("STEP_DURATION %s: use %s to %s", r.Step, MinRampStep, MaxDuration)
	case r.Step.D() > MaxDuration/time.Duration(r.Steps):
		return fmt.Errorf("%d steps of %s last longer than %s", r.Steps, r.Step, MaxDuration)
	}
	return nil
}

// IsZero says no ramp was given.
func (r Ramp) IsZero() bool { return r == Ramp{} }

// Length is the whole ramp: Steps x Step.
func (r Ramp) Length() time.Duration { return time.Duration(r.Steps) * r.Step.D() }

// StepRates is each step's offered rate in requests per second, converted
// as Rate.OpsPerSec does (bit rates with the mix's mean value size).
func (r Ramp) StepRates(meanValueBytes float64) ([]float64, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	from, err := r.From.OpsPerSec(meanValueBytes)
	if err != nil {
		return nil, fmt.Errorf("FROM: %w", err)
	}
	to, err := r.To.OpsPerSec(meanValueBytes)
	if err != nil {
		return nil, fmt.Errorf("TO: %w", err)
	}
	rates := make([]float64, r.Steps)
	last := float64(r.Steps - 1)
	for i := range rates {
		// Weighted sum rather than from+step·i: the last step is TO exactly.
		f := float64(i) / last
		rates[i] = from*(1-f) + to*f
	}
	return rates, nil
}

// String prints the ramp as ParseRamp reads it: 50:800:8:10s.
func (r Ramp) String() string {
	if r.IsZero() {
		return ""
	}
	return fmt.Sprintf("%s:%s:%d:%s", r.From, r.To, r.Steps, r.Step)
}

// Set and Type make Ramp a flag value.
func (r *Ramp) Set(v string) error {
	p, err := ParseRamp(v)
	if err != nil {
		return err
	}
	*r = p
	return nil
}

func (r *Ramp) Type() string { return "ramp" }

// MarshalJSON writes the ramp with its step length also in seconds, as
// every duration of a v2 record is.
func (r Ramp) MarshalJSON() ([]byte, error) {
	type plain Ramp
	return json.Marshal(struct {
		plain
		StepS float64 `json:"step_s"`
	}{plain(r), r.Step.Seconds()})
}

// UnmarshalJSON reads what MarshalJSON writes, or a string as --ramp takes
// it, and holds it to the same bounds.
func (r *Ramp) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return r.Set(s)
	}
	type plain Ramp
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("ramp: %w", err)
	}
	if Ramp(p).IsZero() {
		*r = Ramp{}
		return nil
	}
	if err := Ramp(p).Validate(); err != nil {
		return fmt.Errorf("ramp: %w", err)
	}
	*r = Ramp(p)
	return nil
}

// Arrival is --arrival: how requests are spread within a rate.
type Arrival string

const (
	// ArrivalConstant sends request n at n/rate: evenly spaced.
	ArrivalConstant Arrival = "constant"
	// ArrivalPoisson draws exponential gaps with mean 1/rate from the seed:
	// independent arrivals, as many clients sending on their own would.
	ArrivalPoisson Arrival = "poisson"
)

// ArrivalForms is the help text for Arrival.
const ArrivalForms = "constant (evenly spaced) or poisson (exponential gaps from --seed)"

// ParseArrival reads --arrival.
func ParseArrival(s string) (Arrival, error) {
	a := Arrival(strings.TrimSpace(s))
	if err := a.Validate(); err != nil {
		return "", fmt.Errorf("arrival %s: use %s", quoteShort(s), ArrivalForms)
	}
	return a, nil
}

// Validate says whether the arrival process is one linerate knows, on its
// own; the bounds between fields are lab/fields'.
func (a Arrival) Validate() error {
	if a != ArrivalConstant && a != ArrivalPoisson {
		return fmt.Errorf("arrival %s: use %s", quoteShort(string(a)), ArrivalForms)
	}
	return nil
}

func (a Arrival) String() string { return string(a) }

// Set and Type make Arrival a flag value.
func (a *Arrival) Set(v string) error {
	p, err := ParseArrival(v)
	if err != nil {
		return err
	}
	*a = p
	return nil
}

func (a *Arrival) Type() string { return "arrival" }

// UnmarshalText holds a record's arrival to the same two kinds; "" is the
// default (constant) left for Resolve.
func (a *Arrival) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*a = ""
		return nil
	}
	return a.Set(string(b))
}
