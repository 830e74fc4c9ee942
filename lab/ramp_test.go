package lab_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

func TestParseRamp(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    lab.Ramp
		wantErr string
	}{
		{in: "50:800:8:10s", want: lab.Ramp{From: lab.Rate{PerSec: 50}, To: lab.Rate{PerSec: 800}, Steps: 8, Step: lab.Duration(10 * time.Second)}},
		{in: "1Gbps:20Gbps:4:1m", want: lab.Ramp{From: lab.Rate{BitsPerSec: 1e9}, To: lab.Rate{BitsPerSec: 20e9}, Steps: 4, Step: lab.Duration(time.Minute)}},
		{in: "800:50:2:1s", want: lab.Ramp{From: lab.Rate{PerSec: 800}, To: lab.Rate{PerSec: 50}, Steps: 2, Step: lab.Duration(time.Second)}},
		{in: "100:100:3:5s", want: lab.Ramp{From: lab.Rate{PerSec: 100}, To: lab.Rate{PerSec: 100}, Steps: 3, Step: lab.Duration(5 * time.Second)}},
		{in: "1:2:1000:86s", want: lab.Ramp{From: lab.Rate{PerSec: 1}, To: lab.Rate{PerSec: 2}, Steps: 1000, Step: lab.Duration(86 * time.Second)}},

		{in: "", wantErr: "want four parts"},
		{in: "50:800:8", wantErr: "want four parts"},
		{in: "50:800:8:10s:1", wantErr: "want four parts"},
		{in: "x:800:8:10s", wantErr: "FROM: rate \"x\""},
		{in: "0:800:8:10s", wantErr: "FROM: rate \"0\""},
		{in: "50:NaN:8:10s", wantErr: "TO: rate \"NaN\""},
		{in: "50:20Gbps:8:10s", wantErr: "both in requests/s or both as bit rates"},
		{in: "50:800:eight:10s", wantErr: "STEPS \"eight\" is not a whole number"},
		{in: "50:800:1:10s", wantErr: "STEPS 1: use 2-1000"},
		{in: "50:800:1001:10s", wantErr: "STEPS 1001"},
		{in: "50:800:-3:10s", wantErr: "STEPS -3"},
		{in: "50:800:99999999999999999999:10s", wantErr: "STEPS"},
		{in: "50:800:8:ten", wantErr: "STEP_DURATION \"ten\""},
		{in: "50:800:8:500ms", wantErr: "STEP_DURATION 500ms: use 1s to 24h0m0s"},
		{in: "50:800:8:-10s", wantErr: "STEP_DURATION -10s"},
		{in: "50:800:8:25h", wantErr: "STEP_DURATION 25h0m0s"},
		{in: "1:2:1000:87s", wantErr: "1000 steps of 1m27s last longer than 24h0m0s"},
		{in: strings.Repeat("1", 5000), wantErr: "longer than 4096"},
	} {
		got, err := lab.ParseRamp(tc.in)
		switch {
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("ParseRamp(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("ParseRamp(%q) = %+v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
		}
		if err == nil {
			back, err := lab.ParseRamp(got.String())
			if err != nil || back != got {
				t.Errorf("%q prints %q, which reads back as %+v, %v", tc.in, got.String(), back, err)
			}
		}
	}
}

func TestRampStepRates(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		ramp string
		mean float64
		want []float64
	}{
		{"50:800:4:10s", 0, []float64{50, 300, 550, 800}},
		{"800:50:4:10s", 0, []float64{800, 550, 300, 50}},
		{"100:100:3:1s", 0, []float64{100, 100, 100}},
		{"8Gbps:32Gbps:4:1s", mib, []float64{8e9 / 8 / mib, 16e9 / 8 / mib, 24e9 / 8 / mib, 32e9 / 8 / mib}},
	} {
		r, err := lab.ParseRamp(tc.ramp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.StepRates(tc.mean)
		if err != nil || len(got) != len(tc.want) {
			t.Fatalf("%s: %v, %v", tc.ramp, got, err)
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-9*tc.want[i] {
				t.Errorf("%s step %d: %v, want %v", tc.ramp, i, got[i], tc.want[i])
			}
		}
		if got[len(got)-1] != tc.want[len(tc.want)-1] {
			t.Errorf("%s: the last step is %v, not TO %v exactly", tc.ramp, got[len(got)-1], tc.want[len(tc.want)-1])
		}
		if r.Length() != time.Duration(r.Steps)*r.Step.D() {
			t.Errorf("%s: length %s", tc.ramp, r.Length())
		}
	}
	r, _ := lab.ParseRamp("1kbps:1Gbps:4:1s")
	if _, err := r.StepRates(64 * mib); err == nil || !strings.Contains(err.Error(), "FROM") {
		t.Errorf("a FROM that converts below the minimum: %v", err)
	}
}

func TestRampJSON(t *testing.T) {
	r, _ := lab.ParseRamp("50:1.5k:8:10s")
	b, err := json.Marshal(r)
	want := `{"from":{"ops_per_sec":50},"to":{"ops_per_sec":1500},"steps":8,"step":"10s","step_s":10}`
	if err != nil || string(b) != want {
		t.Errorf("marshals to %s, %v; want %s", b, err, want)
	}
	var back lab.Ramp
	if err := json.Unmarshal(b, &back); err != nil || back != r {
		t.Errorf("reads back as %+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`"50:800:8:10s"`), &back); err != nil || back.Steps != 8 {
		t.Errorf("a string as --ramp takes it: %+v, %v", back, err)
	}
	for _, in := range []string{
		`{"from":{"ops_per_sec":50},"to":{"ops_per_sec":800},"steps":1,"step":"10s"}`,
		`{"from":{"ops_per_sec":50},"to":{"bits_per_sec":800},"steps":2,"step":"10s"}`,
		`{"from":{"ops_per_sec":0.001},"to":{"ops_per_sec":800},"steps":2,"step":"10s"}`,
		`{"from":{"ops_per_sec":50},"to":{"ops_per_sec":800},"steps":2,"step":"1ms"}`,
		`"50:800"`,
	} {
		if err := json.Unmarshal([]byte(in), &back); err == nil {
			t.Errorf("%s read as %+v, want an error", in, back)
		}
	}
}

func TestParseArrival(t *testing.T) {
	for in, want := range map[string]lab.Arrival{"constant": lab.ArrivalConstant, " poisson ": lab.ArrivalPoisson} {
		if a, err := lab.ParseArrival(in); err != nil || a != want {
			t.Errorf("ParseArrival(%q) = %q, %v", in, a, err)
		}
	}
	for _, in := range []string{"", "Poisson", "uniform", "poisson:2"} {
		if a, err := lab.ParseArrival(in); err == nil || !strings.Contains(err.Error(), "constant (evenly spaced) or poisson") {
			t.Errorf("ParseArrival(%q) = %q, %v; want an error listing the kinds", in, a, err)
		}
	}
	var a lab.Arrival
	if err := json.Unmarshal([]byte(`"bursty"`), &a); err == nil {
		t.Errorf("a record's arrival \"bursty\" read as %q", a)
	}
	if err := json.Unmarshal([]byte(`"poisson"`), &a); err != nil || a != lab.ArrivalPoisson {
		t.Errorf("a record's arrival: %q, %v", a, err)
	}
}
