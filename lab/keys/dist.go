// Package keys draws the key numbers a workload asks for: uniform,
// sequential, zipf with any exponent α > 0, and a gaussian clipped to the
// keyspace. A Dist is the parsed --key-dist value (what the record stores);
// a Sampler is one worker's generator over keys 0..n-1, built once, whose
// Next neither allocates nor locks.
package keys

import (
	"fmt"
	"strconv"
	"strings"
)

// Kinds of distribution.
const (
	Uniform    = "uniform"
	Sequential = "sequential"
	Zipf       = "zipf"
	Gaussian   = "gaussian"
)

// MaxZipfAlpha bounds the exponent: at 10 key 0 already takes 99.9 % of
// the draws and key 1 nearly all the rest, so a larger one measures nothing
// new. There is no lower bound but 0: the sampler is exact for any α > 0.
const MaxZipfAlpha = 10

// MaxGaussianSD bounds the gaussian's standard deviation (a fraction of the
// keyspace). With the mean inside the keyspace and SD at most 1, at least a
// third of the raw draws land inside, so the rejection loop ends quickly;
// a wider bell is a uniform distribution with extra steps.
const MaxGaussianSD = 1

// Forms is the help text of the flag and the hint of every parse error.
const Forms = "uniform, sequential, zipf:ALPHA (0 < ALPHA <= 10, e.g. zipf:0.9), " +
	"or gaussian:MEAN,SD (fractions of the keyspace: 0 <= MEAN <= 1, 0 < SD <= 1, e.g. gaussian:0.5,0.1)"

// Dist is a key distribution as --key-dist names it.
//
// Gaussian's Mean and SD are fractions of the keyspace, not key numbers, so
// the same value keeps its shape when a campaign sweeps the keyspace size:
// gaussian:0.5,0.1 centres on the middle key with a standard deviation of a
// tenth of the keys, whatever -n is.
type Dist struct {
	Kind  string  `json:"kind"`
	Alpha float64 `json:"alpha,omitempty"` // zipf exponent
	Mean  float64 `json:"mean,omitempty"`  // gaussian centre, fraction of the keyspace
	SD    float64 `json:"sd,omitempty"`    // gaussian standard deviation, fraction of the keyspace
}

// Parse reads "uniform", "sequential", "zipf:ALPHA" or "gaussian:MEAN,SD".
// Errors are one line that quotes the value and gives the forms; the caller
// adds the flag or the file position.
func Parse(s string) (Dist, error) {
	kind, args, hasArgs := strings.Cut(strings.TrimSpace(s), ":")
	d := Dist{Kind: kind}
	num := func(name, v string) (float64, error) {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %s %q is not a number; use %s", s, name, v, Forms)
		}
		return f, nil
	}
	var err error
	switch kind {
	case Uniform, Sequential:
		if hasArgs {
			return Dist{}, fmt.Errorf("%q: %s takes no parameter; use %s", s, kind, Forms)
		}
	case Zipf:
		if !hasArgs {
			return Dist{}, fmt.Errorf("%q: zipf needs its exponent; use %s", s, Forms)
		}
		if d.Alpha, err = num("exponent", args); err != nil {
			return Dist{}, err
		}
	case Gaussian:
		mean, sd, two := strings.Cut(args, ",")
		if !hasArgs || !two {
			return Dist{}, fmt.Errorf("%q: gaussian needs MEAN,SD; use %s", s, Forms)
		}
		if d.Mean, err = num("mean", mean); err != nil {
			return Dist{}, err
		}
		if d.SD, err = num("sd", sd); err != nil {
			return Dist{}, err
		}
	default:
		return Dist{}, fmt.Errorf("%q: unknown distribution; use %s", s, Forms)
	}
	if err := d.Validate(); err != nil {
		return Dist{}, err
	}
	return d, nil
}

// Validate checks the kind and the bounds of its parameters. Comparisons are
// written so that NaN fails them.
func (d Dist) Validate() error {
	switch d.Kind {
	case Uniform, Sequential:
		if d.Alpha != 0 || d.Mean != 0 || d.SD != 0 {
			return fmt.Errorf("%s takes no parameter; use %s", d.Kind, Forms)
		}
	case Zipf:
		if !(d.Alpha > 0 && d.Alpha <= MaxZipfAlpha) {
			return fmt.Errorf("zipf:%g: the exponent must be above 0 and at most %d; use %s", d.Alpha, MaxZipfAlpha, Forms)
		}
		if d.Mean != 0 || d.SD != 0 {
			return fmt.Errorf("zipf takes only an exponent; use %s", Forms)
		}
	case Gaussian:
		if !(d.Mean >= 0 && d.Mean <= 1) {
			return fmt.Errorf("gaussian:%g,%g: the mean is a fraction of the keyspace, 0 to 1; use %s", d.Mean, d.SD, Forms)
		}
		if !(d.SD > 0 && d.SD <= MaxGaussianSD) {
			return fmt.Errorf("gaussian:%g,%g: the sd is a fraction of the keyspace, above 0 and at most %d; use %s", d.Mean, d.SD, MaxGaussianSD, Forms)
		}
		if d.Alpha != 0 {
			return fmt.Errorf("gaussian takes only MEAN,SD; use %s", Forms)
		}
	default:
		return fmt.Errorf("%q: unknown distribution; use %s", d.Kind, Forms)
	}
	return nil
}

// String is the form Parse reads back to the same Dist (%g is the shortest
// text that round-trips a float64).
func (d Dist) String() string {
	switch d.Kind {
	case Zipf:
		return "zipf:" + strconv.FormatFloat(d.Alpha, 'g', -1, 64)
	case Gaussian:
		return "gaussian:" + strconv.FormatFloat(d.Mean, 'g', -1, 64) + "," + strconv.FormatFloat(d.SD, 'g', -1, 64)
	}
	return d.Kind
}

// Set and Type make *Dist a flag value (pflag.Value); the flag package puts
// the flag's name in front of Set's error.
func (d *Dist) Set(s string) error {
	p, err := Parse(s)
	if err != nil {
		return err
	}
	*d = p
	return nil
}

func (d *Dist) Type() string { return "dist" }
