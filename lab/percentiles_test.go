package lab_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
)

// skewed is a histogram whose percentiles all differ: 1..1000 µs, then a
// tail to 100 ms.
func skewed(t *testing.T) lab.LatencySummary {
	t.Helper()
	h := lab.NewHistogram()
	for i := int64(1); i <= 1000; i++ {
		lab.RecordUs(h, i*1000)
	}
	for i := int64(1); i <= 20; i++ {
		lab.RecordUs(h, i*5_000_000)
	}
	s, err := lab.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every summary carries p95, as its JSON says it, and it is the stored
// histogram's value at 95.
func TestSummaryCarriesP95(t *testing.T) {
	s := skewed(t)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want, err := s.ValueAt(95)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := m["p95"].(float64); !ok || got != want {
		t.Fatalf("summary JSON p95 = %v, want the histogram's value at 95, %v (%s)", m["p95"], want, b[:min(len(b), 160)])
	}
	if p90, _ := m["p90"].(float64); !(p90 < want) {
		t.Errorf("p90 %v not below p95 %v: the histogram is not skewed enough to tell them apart", p90, want)
	}
}

func TestParsePercentiles(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"50,90,95,99,99.9,99.99", []string{"p50", "p90", "p95", "p99", "p99.9", "p99.99"}},
		{"p95,p99,p99.9", []string{"p95", "p99", "p99.9"}},
		{" P99 , 99.999 ,100", []string{"p99", "p99.999", "p100"}},
	} {
		ps, err := lab.ParsePercentiles(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		var names []string
		for _, p := range ps {
			names = append(names, lab.PercentileName(p))
		}
		if strings.Join(names, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%q reads as %v, want %v", tc.in, names, tc.want)
		}
		if back, err := lab.ParsePercentiles(ps.String()); err != nil || back.String() != ps.String() {
			t.Errorf("%q: String %q does not read back (%v, %v)", tc.in, ps.String(), back, err)
		}
	}
	for _, in := range []string{"", ",", "0", "-1", "100.1", "NaN", "p", "pp99", "99,99", "p99,99", "1e309",
		"95;99", strings.Repeat("1,", 17) + "2"} {
		if ps, err := lab.ParsePercentiles(in); err == nil {
			t.Errorf("%q accepted as %v", in, ps)
		}
	}
}

// A record's summaries gain the percentiles asked for that have no field
// of their own, read from each summary's histogram; the others are the
// fields already there.
func TestAddPercentiles(t *testing.T) {
	s := skewed(t)
	ttfb := s
	r := &lab.Result{Ops: map[lab.Op]*lab.OpResult{lab.OpGet: {Latency: s, TTFB: &ttfb}, lab.OpSet: {}}}
	ps, err := lab.ParsePercentiles("50,95,99.99")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AddPercentiles(ps); err != nil {
		t.Fatal(err)
	}
	want, _ := s.ValueAt(99.99)
	for name, l := range map[string]lab.LatencySummary{"latency": r.Ops[lab.OpGet].Latency, "ttfb": *r.Ops[lab.OpGet].TTFB} {
		if got := l.Percentiles["p99.99"]; got != want || len(l.Percentiles) != 1 {
			t.Errorf("%s: percentiles %v, want only p99.99 = %v", name, l.Percentiles, want)
		}
		for _, p := range ps {
			v, err := l.At(p)
			hv, _ := s.ValueAt(p)
			if err != nil || v != hv {
				t.Errorf("%s: At(%g) = %v, %v; the histogram says %v", name, p, v, err, hv)
			}
		}
	}
	if l := r.Ops[lab.OpSet].Latency; l.Percentiles != nil {
		t.Errorf("an op that completed nothing gained percentiles %v", l.Percentiles)
	}
	// A record written before p95 was kept reads it from the histogram.
	old := s
	old.P95 = 0
	if v, err := old.At(95); err != nil || math.Abs(v-s.P95) > 0 {
		t.Errorf("At(95) of an old summary: %v, %v; want %v", v, err, s.P95)
	}
}
