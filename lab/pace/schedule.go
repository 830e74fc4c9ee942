package pace

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/linerate/linerate/lab"
)

// Pacer is the engine's pacing seam (the package doc states the contract).
// Closed loop is a pacer that never waits and never stops.
type Pacer interface {
	Pace(elapsed time.Duration, sent uint64) (wait time.Duration, stop bool)
}

// ClosedLoop is the pacer of closed-loop load: it never waits and never
// stops, so each connection sends its next request when its last reply
// ends, and the run's duration ends the load.
type ClosedLoop struct{}

func (ClosedLoop) Pace(time.Duration, uint64) (time.Duration, bool) { return 0, false }

// MaxLength bounds a schedule: a warmup and a window of lab.MaxDuration
// each. At lab.MaxRate that is under 2^41 requests, so every request
// number and count below is exact in a float64.
const MaxLength = 2 * lab.MaxDuration

// Schedule is a rate profile (one constant rate, or a rate per step of a
// ramp) and an arrival process. Request n of the whole schedule is due
// when the profile's running count of requests reaches c(n): c(n) = n for
// constant arrivals, the sum of n+1 exponential gaps of mean 1 for
// poisson. So the intended time never accumulates rounding: it is the
// profile's inverse at c(n).
type Schedule struct {
	rates []float64     // requests/s of each step, for the whole schedule
	step  time.Duration // each step's length (a constant rate: the whole length)
	due   []float64     // due[i]: requests the profile offers before step i
	seed  uint64
	poiss bool

	// This schedule sends the whole schedule's requests share, share+of,
	// share+2·of, ... (constant), or an independent 1/of of its poisson
	// arrivals (see Share).
	share, of uint64

	// The poisson cursor: sum is the sum of gaps 0..next-1 drawn from pcg.
	// It only caches: any n is reached by replaying from 0.
	pcg  rand.PCG
	next uint64
	sum  float64

	hint int // the step the last lookup fell in
}

// Constant is a schedule of rate requests per second for length, then
// nothing. Arrival "" is constant.
func Constant(rate float64, length time.Duration, arrival lab.Arrival, seed uint64) (*Schedule, error) {
	if length <= 0 || length > MaxLength {
		return nil, fmt.Errorf("schedule length %s: use more than 0 and at most %s", length, MaxLength)
	}
	return build([]float64{rate}, length, arrival, seed)
}

// Steps is a schedule of len(rates) steps of step each, step i at rates[i]
// requests per second (lab.Ramp.StepRates gives them), then nothing.
func Steps(rates []float64, step time.Duration, arrival lab.Arrival, seed uint64) (*Schedule, error) {
	switch {
	case len(rates) < 1 || len(rates) > lab.MaxRampSteps:
		return nil, fmt.Errorf("%d steps: use 1-%d", len(rates), lab.MaxRampSteps)
	case step <= 0 || step > MaxLength/time.Duration(len(rates)):
		return nil, fmt.Errorf("%d steps of %s: use steps of more than 0 and at most %s in all", len(rates), step, MaxLength)
	}
	return build(append([]float64(nil), rates...), step, arrival, seed)
}

// FromRate is Constant at --rate r, a bit rate converted with the value
// size mix's mean (lab.SizeMix.Mean), for length.
func FromRate(r lab.Rate, meanValueBytes float64, length time.Duration, arrival lab.Arrival, seed uint64) (*Schedule, error) {
	ops, err := r.OpsPerSec(meanValueBytes) // its error names r
	if err != nil {
		return nil, err
	}
	return Constant(ops, length, arrival, seed)
}

// FromRamp is Steps at --ramp r's step rates (lab.Ramp.StepRates).
func FromRamp(r lab.Ramp, meanValueBytes float64, arrival lab.Arrival, seed uint64) (*Schedule, error) {
	rates, err := r.StepRates(meanValueBytes)
	if err != nil {
		return nil, fmt.Errorf("ramp %s: %w", r, err)
	}
	return Steps(rates, r.Step.D(), arrival, seed)
}

func build(rates []float64, step time.Duration, arrival lab.Arrival, seed uint64) (*Schedule, error) {
	if arrival != "" && arrival != lab.ArrivalConstant && arrival != lab.ArrivalPoisson {
		return nil, fmt.Errorf("arrival %q: use %s", arrival, lab.ArrivalForms)
	}
	due := make([]float64, len(rates)+1)
	for i, r := range rates {
		if !(r >= lab.MinRate && r <= lab.MaxRate) {
			return nil, fmt.Errorf("step %d: %v requests/s: use %v to %d", i, r, lab.MinRate, lab.MaxRate)
		}
		due[i+1] = due[i] + r*step.Seconds()
	}
	s := &Schedule{rates: rates, step: step, due: due, seed: seed, poiss: arrival == lab.ArrivalPoisson, of: 1}
	s.rewind()
	return s, nil
}

// Share is worker i's part of the whole schedule s describes, for k
// workers: together the k shares send what s offers. Constant arrivals
// are dealt round-robin (share i sends the whole schedule's requests i,
// i+k, i+2k, ...), so the union is exactly s's requests. Poisson
// arrivals: each share is an independent poisson process at 1/k of the
// rate (gaps drawn from the seed and i), and the union of independent
// poisson processes is the poisson process of the whole rate. Request
// numbers passed to a share's Pace and Intended count that share's own
// requests, from 0.
func (s *Schedule) Share(i, k int) (*Schedule, error) {
	if k < 1 || i < 0 || i >= k {
		return nil, fmt.Errorf("share %d of %d: want 0 <= i < k", i, k)
	}
	c := &Schedule{rates: s.rates, step: s.step, due: s.due, seed: s.seed, poiss: s.poiss,
		share: uint64(i), of: uint64(k)}
	c.rewind()
	return c, nil
}

// rewind puts the poisson cursor before the first gap.
func (s *Schedule) rewind() {
	s.pcg.Seed(s.seed, s.share)
	s.next, s.sum = 0, 0
}

// Pace implements Pacer: request number sent is due at Intended(sent).
func (s *Schedule) Pace(elapsed time.Duration, sent uint64) (time.Duration, bool) {
	at, ok := s.Intended(sent)
	return due(at, ok, elapsed)
}

// due is the Pacer answer for a request intended at at (ok: it exists).
func due(at time.Duration, ok bool, elapsed time.Duration) (time.Duration, bool) {
	switch {
	case !ok:
		return 0, true
	case at <= elapsed:
		return 0, false
	}
	return at - elapsed, false
}

// Intended is when request n (0-based, of this schedule) is meant to be
// sent, from the start of the load; ok is false when the schedule ends
// before it. Constant: n/rate within a step. The cost is constant for
// constant arrivals; for poisson it grows with how far n moved since the
// last call (one exponential draw per request), and going back replays
// from request 0.
func (s *Schedule) Intended(n uint64) (at time.Duration, ok bool) {
	c, ok := s.count(n)
	if !ok {
		return 0, false
	}
	return s.at(c)
}

// count is the profile's running count at which request n is due.
func (s *Schedule) count(n uint64) (float64, bool) {
	end := s.due[len(s.rates)]
	if !s.poiss {
		c := float64(n)*float64(s.of) + float64(s.share)
		return c, c < end
	}
	if n == math.MaxUint64 {
		return 0, false
	}
	if s.next > n+1 {
		s.rewind()
	}
	limit := end / float64(s.of)
	for s.next <= n {
		if s.sum >= limit { // gaps only add: n is past the end
			return 0, false
		}
		// u in (0, 1]: -ln u is an exponential gap of mean 1, never infinite.
		u := float64(s.pcg.Uint64()>>11+1) / (1 << 53)
		s.sum -= math.Log(u)
		s.next++
	}
	c := s.sum * float64(s.of)
	return c, c < end
}

// at inverts the profile: the time its running count reaches c.
func (s *Schedule) at(c float64) (time.Duration, bool) {
	last := len(s.rates)
	if !(c >= 0 && c < s.due[last]) {
		return 0, false
	}
	i := s.hint
	if !(s.due[i] <= c && c < s.due[i+1]) {
		lo, hi := 0, last-1 // the last step i with due[i] <= c
		for lo < hi {
			if mid := (lo + hi + 1) / 2; s.due[mid] <= c {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		i, s.hint = lo, lo
	}
	ns := float64(i)*float64(s.step) + (c-s.due[i])/s.rates[i]*1e9
	return time.Duration(math.Round(ns)), true
}

// Step is the step elapsed falls in, false before the start or from the
// end on. A constant schedule has one step.
func (s *Schedule) Step(elapsed time.Duration) (int, bool) {
	if elapsed < 0 || elapsed >= s.End() {
		return 0, false
	}
	return int(elapsed / s.step), true
}

// Steps is how many steps the schedule has (1 for a constant rate).
func (s *Schedule) Steps() int { return len(s.rates) }

// StepLength is each step's length (a constant rate: the whole length).
func (s *Schedule) StepLength() time.Duration { return s.step }

// Rate is step i's offered rate in requests per second, for the whole
// schedule (not a share): a step record's offered figure.
func (s *Schedule) Rate(i int) float64 { return s.rates[i] }

// End is when the schedule ends: no request is due from then on.
func (s *Schedule) End() time.Duration { return time.Duration(len(s.rates)) * s.step }

// After is closed loop from start on: nothing before, then never a wait
// and never a stop (the main load beside a probe that first runs alone).
func After(start time.Duration) Pacer { return after(start) }

type after time.Duration

func (a after) Pace(elapsed time.Duration, _ uint64) (time.Duration, bool) {
	return max(time.Duration(a)-elapsed, 0), false
}
