package stats

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mathext"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// Two-sided p-values of Student's t. Closed forms for df 1 and 2; the rest
// are printed critical values (t tables) and values from numerically
// integrating the t density (Simpson, 200000 steps), which shares no code
// with gonum's t distribution under test.
func TestStudentTTwoSided(t *testing.T) {
	for _, tc := range []struct {
		t, df, p, tol float64
		src           string
	}{
		{1, 1, 0.5, 1e-12, "Cauchy: 1 - 2 atan(1)/pi"},
		{3, 1, 1 - 2*math.Atan(3)/math.Pi, 1e-12, "Cauchy"},
		{-2.1213203435596424, 2, 1 - 2.1213203435596424/math.Sqrt(2+4.5), 1e-12, "df=2: 1 - |t|/sqrt(2+t^2)"},
		{0.3, 2, 1 - 0.3/math.Sqrt(2.09), 1e-12, "df=2"},
		{2.228, 10, 0.05, 5e-4, "t table, 0.05 two-sided, df 10"},
		{4.032, 5, 0.01, 5e-5, "t table, 0.01 two-sided, df 5"},
		{2.086, 20, 0.05, 5e-5, "t table"},
		{2.750, 30, 0.01, 5e-5, "t table"},
		{1.959964, 1e7, 0.05, 1e-5, "normal limit"},
		{1.0, 3, 0.39100221895577125, 1e-9, "integrated density"},
		{0.5, 7.5, 0.6314109646224553, 1e-9, "integrated density, fractional df"},
		{3.5, 2.5, 0.05234554696034166, 1e-9, "integrated density, fractional df"},
		{0, 4, 1, 1e-12, "t=0"},
	} {
		got := StudentTTwoSided(tc.t, tc.df)
		if !near(got, tc.p, tc.tol) {
			t.Errorf("t=%g df=%g: p=%.10f, want %.10f (%s)", tc.t, tc.df, got, tc.p, tc.src)
		}
	}
	// One tail of the table's 0.05 two-sided value is 0.025.
	if got := StudentTTwoSided(2.228, 10) / 2; !near(got, 0.025, 5e-4) {
		t.Errorf("P(T > 2.228; 10) = %g, want 0.025", got)
	}
	if got := StudentTTwoSided(-2.228, 10) / 2; !near(got, 0.025, 5e-4) {
		t.Errorf("P(T < -2.228; 10) = %g, want 0.025", got)
	}
}

// The t distribution's tails rest on gonum's regularized incomplete beta
// I_x(a, b); these closed forms pin it across gonum upgrades.
func TestRegIncBeta(t *testing.T) {
	for _, tc := range []struct{ a, b, x, want float64 }{
		{1, 1, 0.3, 0.3},  // uniform
		{2, 1, 0.5, 0.25}, // x^2
		{1, 2, 0.5, 0.75}, // 1-(1-x)^2
		{2, 2, 0.5, 0.5},  // symmetric
		{3, 2, 0.4, 4*math.Pow(.4, 3) - 3*math.Pow(.4, 4)}, // I_x(3,2) = 4x^3 - 3x^4
		{0.5, 0.5, 0.5, 0.5},
		{0.5, 0.5, 0.25, 2 / math.Pi * math.Asin(0.5)}, // arcsine law
	} {
		if got := mathext.RegIncBeta(tc.a, tc.b, tc.x); !near(got, tc.want, 1e-12) {
			t.Errorf("I_%g(%g,%g) = %.15f, want %.15f", tc.x, tc.a, tc.b, got, tc.want)
		}
	}
}

func TestWelch(t *testing.T) {
	// The textbook example (two samples of 15, unequal variances) as in
	// the Welch's t-test article: t = -2.46, df = 25.0, p = 0.021.
	a1 := []float64{27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4}
	a2 := []float64{27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4}
	w, ok := WelchTest(a1, a2)
	if !ok || !near(w.T, -2.45535639828601, 1e-9) || !near(w.DF, 24.98852929023142, 1e-9) || !near(w.P, 0.021378, 1e-5) {
		t.Errorf("welch = %+v ok=%v, want t=-2.4554 df=24.989 p=0.02138", w, ok)
	}
	// By hand: means 2 and 5, variances 2 and 2, SE sqrt(2), t=-3/sqrt(2), df 2.
	w, _ = WelchTest([]float64{1, 3}, []float64{4, 6})
	if !near(w.T, -3/math.Sqrt2, 1e-12) || !near(w.DF, 2, 1e-12) || !near(w.P, 0.16794970566215628, 1e-9) {
		t.Errorf("welch small = %+v", w)
	}
	if _, ok := WelchTest([]float64{1}, []float64{1, 2}); ok {
		t.Error("one value on a side must not test")
	}
	if w, _ := WelchTest([]float64{5, 5}, []float64{5, 5}); w.P != 1 {
		t.Errorf("identical constant samples: p=%g, want 1", w.P)
	}
	if w, _ := WelchTest([]float64{5, 5}, []float64{6, 6}); w.P != 0 {
		t.Errorf("different constant samples: p=%g, want 0", w.P)
	}
}

func TestDescribe(t *testing.T) {
	s := Describe([]float64{4, 1, 3, 2})
	if s.Median != 2.5 || s.Min != 1 || s.Max != 4 || s.Mean != 2.5 {
		t.Errorf("describe = %+v", s)
	}
	// sample sd of 1..4 is sqrt(5/3)
	if !near(s.StdDev, math.Sqrt(5.0/3), 1e-12) || !near(s.CV, math.Sqrt(5.0/3)/2.5, 1e-12) {
		t.Errorf("sd/cv = %g/%g", s.StdDev, s.CV)
	}
	if Describe([]float64{7, 1, 9}).Median != 7 {
		t.Error("odd median")
	}
}

func TestMark(t *testing.T) {
	for _, tc := range []struct {
		p    float64
		ok   bool
		want string
	}{{0.0004, true, "***"}, {0.004, true, "**"}, {0.04, true, "*"}, {0.2, true, "ns"}, {0.01, false, "n/a"}} {
		if got := Mark(tc.p, tc.ok, 0.05); got != tc.want {
			t.Errorf("Mark(%g) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

func TestAnalyzeDrift(t *testing.T) {
	wobble := func(i int) float64 { return float64(i%3-1) * 0.5 } // ±0.5 around the level
	series := func(n int, level func(i int) float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = level(i) + wobble(i)
		}
		return xs
	}
	for _, tc := range []struct {
		name    string
		xs      []float64
		verdict string
		stepAt  int
	}{
		{"flat", series(900, func(int) float64 { return 200 }), DriftStable, -1},
		{"step down at 600", series(900, func(i int) float64 {
			if i >= 600 {
				return 180
			}
			return 200
		}), DriftStep, 600},
		{"slow ramp down 10%", series(900, func(i int) float64 { return 200 - 20*float64(i)/900 }), DriftTrend, -1},
		{"ramp under threshold", series(900, func(i int) float64 { return 200 - 2*float64(i)/900 }), DriftStable, -1},
		{"too short", series(8, func(int) float64 { return 1 }), DriftTooShort, -1},
		{"big change, few noisy seconds", []float64{5, 3, 6, 4, 5, 6, 2, 5, 4, 3, 4, 4, 6, 3, 2, 3, 5, 2}, DriftNoisy, -1},
	} {
		d := AnalyzeDrift(tc.xs, DriftOptions{})
		if d.Verdict != tc.verdict {
			t.Errorf("%s: verdict %s, want %s (change %.3f p %.3g step %+v)", tc.name, d.Verdict, tc.verdict, d.Change, d.Test.P, d.Step)
			continue
		}
		if tc.stepAt >= 0 && (d.Step == nil || d.Step.At < tc.stepAt-2 || d.Step.At > tc.stepAt+2) {
			t.Errorf("%s: step %+v, want at %d", tc.name, d.Step, tc.stepAt)
		}
	}
}

func TestAnalyzeDriftLong(t *testing.T) {
	xs := make([]float64, 86400)
	for i := range xs {
		xs[i] = 100 + float64(i%7)
		if i > 50000 {
			xs[i] -= 10
		}
	}
	d := AnalyzeDrift(xs, DriftOptions{})
	if d.Verdict != DriftStep || d.Step.At < 49990 || d.Step.At > 50010 {
		t.Errorf("day-long step: %s %+v", d.Verdict, d.Step)
	}
}

func TestWelchJSON(t *testing.T) {
	w, _ := WelchTest([]float64{5, 5}, []float64{6, 6}) // t = -Inf
	b, err := json.Marshal(w)
	if err != nil || string(b) != `{"t":null,"df":2,"p":0}` {
		t.Errorf("%s %v", b, err)
	}
	d := AnalyzeDrift(make([]float64, 30), DriftOptions{}) // all zeros
	if _, err := json.Marshal(d); err != nil {
		t.Errorf("drift of a flat zero series: %v", err)
	}
	// Nothing completed in the first third: the change is infinite.
	xs := make([]float64, 30)
	for i := 10; i < 30; i++ {
		xs[i] = 5 + float64(i%2)
	}
	d = AnalyzeDrift(xs, DriftOptions{})
	b, err = json.Marshal(d)
	if err != nil || !strings.Contains(string(b), `"change":null`) || strings.Count(string(b), `"change"`) != 2 {
		t.Errorf("%s %v", b, err)
	}
}
