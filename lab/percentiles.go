package lab

import (
	"fmt"
	"strconv"
	"strings"
)

// Percentiles is a --percentiles list: which latency percentiles the
// bench prints and the record's summaries carry, and which the plots and
// reports chart. Bench and plots read it alike: "99.9" and "p99.9" are the
// same percentile, named "p99.9" everywhere (PercentileName).
type Percentiles []float64

// MaxPercentiles bounds a list: a table of more columns is unreadable and
// each costs a histogram read per summary.
const MaxPercentiles = 16

// DefaultPercentiles are the bench table's columns: every percentile a
// summary keeps in a field of its own.
var DefaultPercentiles = Percentiles{50, 90, 95, 99, 99.9}

// PercentilesForms is the help text of a --percentiles flag.
const PercentilesForms = "comma-separated percentiles above 0 and at most 100, with or without a leading p (50,90,95,99,99.9,99.99 or p95,p99.9)"

// ParsePercentiles reads "50,90,95,99,99.9,99.99" or "p95,p99.9": at
// least one, at most MaxPercentiles, each above 0 and at most 100 (p100
// is the max), none twice. Order is kept: it is the table's.
func ParsePercentiles(s string) (Percentiles, error) {
	var out Percentiles
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		num := strings.TrimPrefix(strings.ToLower(f), "p")
		p, err := strconv.ParseFloat(num, 64)
		// Written so that NaN fails too.
		if err != nil || !(p > 0 && p <= 100) || strings.ContainsAny(num, "pP") {
			return nil, fmt.Errorf("percentile %q: use %s", f, PercentilesForms)
		}
		for _, q := range out {
			if q == p {
				return nil, fmt.Errorf("percentile %q given twice", f)
			}
		}
		if len(out) == MaxPercentiles {
			return nil, fmt.Errorf("more than %d percentiles in %q", MaxPercentiles, s)
		}
		out = append(out, p)
	}
	return out, nil
}

// PercentileName is how tables, charts and record keys name a
// percentile: p50, p99.9, p99.99.
func PercentileName(p float64) string { return "p" + strconv.FormatFloat(p, 'g', -1, 64) }

// String is the list as ParsePercentiles reads it back.
func (ps Percentiles) String() string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = strconv.FormatFloat(p, 'g', -1, 64)
	}
	return strings.Join(names, ",")
}

// Set and Type make *Percentiles a flag value.
func (ps *Percentiles) Set(s string) error {
	p, err := ParsePercentiles(s)
	if err != nil {
		return err
	}
	*ps = p
	return nil
}

func (ps *Percentiles) Type() string { return "list" }

// field is the summary field that keeps percentile p, nil for one kept
// only in the histogram.
func (s *LatencySummary) field(p float64) *float64 {
	switch p {
	case 50:
		return &s.P50
	case 90:
		return &s.P90
	case 95:
		return &s.P95
	case 99:
		return &s.P99
	case 99.9:
		return &s.P999
	}
	return nil
}

// At is percentile p in microseconds: its field, or Percentiles' entry,
// or else read from the histogram (p95 of a record written before
// summaries kept it, any percentile never asked for). 0 when nothing
// completed.
func (s LatencySummary) At(p float64) (float64, error) {
	if s.Count == 0 {
		return 0, nil
	}
	if f := s.field(p); f != nil && *f > 0 {
		return *f, nil
	}
	if v, ok := s.Percentiles[PercentileName(p)]; ok {
		return v, nil
	}
	return s.ValueAt(p)
}

// addPercentiles stores the percentiles of ps that have no field of their
// own in s.Percentiles, read from its histogram.
func (s *LatencySummary) addPercentiles(ps Percentiles) error {
	if s.Count == 0 {
		return nil
	}
	for _, p := range ps {
		if s.field(p) != nil {
			continue
		}
		v, err := s.ValueAt(p)
		if err != nil {
			return fmt.Errorf("percentile %s: %w", PercentileName(p), err)
		}
		if s.Percentiles == nil {
			s.Percentiles = map[string]float64{}
		}
		s.Percentiles[PercentileName(p)] = v
	}
	return nil
}

// AddPercentiles gives every latency summary of the record (each op's
// latency and TTFB) the percentiles of ps it keeps no field for, read from
// its histogram: what --percentiles asks of the record.
func (r *Result) AddPercentiles(ps Percentiles) error {
	for op, o := range r.Ops {
		if err := o.Latency.addPercentiles(ps); err != nil {
			return fmt.Errorf("%s latency: %w", op, err)
		}
		if o.TTFB != nil {
			if err := o.TTFB.addPercentiles(ps); err != nil {
				return fmt.Errorf("%s ttfb: %w", op, err)
			}
		}
	}
	return nil
}
