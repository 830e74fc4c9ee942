package lab

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/linerate/linerate/lab/cpus"
)

// Size is a byte count that parses both unit families: "8MiB" is 8388608,
// "8MB" is 8000000. Bare numbers are bytes.
type Size int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	// Longest suffixes first so "KiB" is not read as "B".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"B", 1},
}

// SizeForms is the help text listing what ParseSize accepts.
const SizeForms = "bytes (1048576), binary units (1KiB, 8MiB, 1GiB) or decimal units (8KB, 8MB, 1GB)"

// ParseSize reads a byte count in either unit family.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty size; use %s", SizeForms)
	}
	mult := int64(1)
	for _, u := range sizeUnits {
		if len(t) > len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			// Case matters between "MB" and "Mb" only in spirit; bits are not a size here.
			mult = u.mult
			t = strings.TrimSpace(t[:len(t)-len(u.suffix)])
			break
		}
	}
	if strings.ContainsAny(t, "eE") { // refuse 1e6: say what was meant in units
		return 0, fmt.Errorf("size %q: use %s", s, SizeForms)
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsNaN(f) {
		return 0, fmt.Errorf("size %q: use %s", s, SizeForms)
	}
	v := f * float64(mult)
	if v > math.MaxInt64/2 || v != math.Trunc(v) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return Size(v), nil
}

// String prints the size in the largest binary unit that divides it exactly,
// else in the decimal unit, else in bytes: 8MiB, 8MB, 1000B.
func (s Size) String() string {
	n := int64(s)
	switch {
	case n == 0:
		return "0B"
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n%1e9 == 0:
		return fmt.Sprintf("%dGB", n/1e9)
	case n%1e6 == 0:
		return fmt.Sprintf("%dMB", n/1e6)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	case n%1e3 == 0:
		return fmt.Sprintf("%dKB", n/1e3)
	}
	return fmt.Sprintf("%dB", n)
}

// Set and Type make Size a flag value.
func (s *Size) Set(v string) error {
	p, err := ParseSize(v)
	if err != nil {
		return err
	}
	*s = p
	return nil
}

func (s *Size) Type() string { return "size" }

// MarshalText stores the resolved byte count, so records are unambiguous.
func (s Size) MarshalJSON() ([]byte, error) { return []byte(strconv.FormatInt(int64(s), 10)), nil }

// UnmarshalJSON accepts a byte count or a string with units.
func (s *Size) UnmarshalJSON(b []byte) error {
	str := strings.Trim(string(b), `"`)
	return s.Set(str)
}

// Ratio is the GET:SET mix, e.g. 100:0, 0:100, 90:10.
type Ratio struct {
	Gets int `json:"get"`
	Sets int `json:"set"`
}

// MaxRatioWeight bounds each side of a ratio: finer mixes than one in a
// million mean nothing in a run of seconds, and the bound keeps GET+SET
// far from overflow.
const MaxRatioWeight = 1_000_000

// RatioForms is the help text for Ratio.
const RatioForms = "GET:SET weights (0-1000000 each) such as 100:0 (GET only), 0:100 (SET only) or 90:10"

// ParseRatio reads "GET:SET".
func ParseRatio(s string) (Ratio, error) {
	g, st, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return Ratio{}, fmt.Errorf("ratio %q: use %s", s, RatioForms)
	}
	gi, err1 := strconv.Atoi(g)
	si, err2 := strconv.Atoi(st)
	r := Ratio{Gets: gi, Sets: si}
	if err1 != nil || err2 != nil || r.Validate() != nil {
		return Ratio{}, fmt.Errorf("ratio %q: use %s", s, RatioForms)
	}
	return r, nil
}

// Validate says whether the ratio is one linerate can keep, on its own; the
// bounds between fields are lab/fields'.
func (r Ratio) Validate() error {
	if r.Gets < 0 || r.Sets < 0 || r.Gets > MaxRatioWeight || r.Sets > MaxRatioWeight || r.Gets+r.Sets == 0 {
		return fmt.Errorf("%d:%d: use %s", r.Gets, r.Sets, RatioForms)
	}
	return nil
}

func (r Ratio) String() string { return fmt.Sprintf("%d:%d", r.Gets, r.Sets) }

func (r *Ratio) Set(v string) error {
	p, err := ParseRatio(v)
	if err != nil {
		return err
	}
	*r = p
	return nil
}

func (r *Ratio) Type() string { return "GET:SET" }

// CPUList is a Linux CPU list such as "4-19" or "0,2,4-7", kept in the
// order written: lab/cpus' one CPU-list type (rules in its package doc).
type CPUList = cpus.List

// MaxCPUs bounds CPU numbers (cpus.Max: 8192, the most CPUs a Linux
// kernel can be built for).
const MaxCPUs = cpus.Max

// CPUListForms is the help text for CPUList.
const CPUListForms = cpus.Forms

// ParseCPUList reads a Linux CPU list, keeping its order; a CPU named twice
// is refused (cpus.Parse).
func ParseCPUList(s string) (CPUList, error) { return cpus.Parse(s) }
