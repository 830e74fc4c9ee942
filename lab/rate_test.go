package lab_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    lab.Rate
		wantErr string // substring; "" means accepted
	}{
		{in: "300", want: lab.Rate{PerSec: 300}},
		{in: " 300 ", want: lab.Rate{PerSec: 300}},
		{in: "0.5", want: lab.Rate{PerSec: 0.5}},
		{in: "1.5k", want: lab.Rate{PerSec: 1500}},
		{in: "2K", want: lab.Rate{PerSec: 2000}},
		{in: "0.01", want: lab.Rate{PerSec: lab.MinRate}},
		{in: "10000000", want: lab.Rate{PerSec: lab.MaxRate}},
		{in: "10000k", want: lab.Rate{PerSec: lab.MaxRate}},
		{in: "20Gbps", want: lab.Rate{BitsPerSec: 20e9}},
		{in: "1.1Gbps", want: lab.Rate{BitsPerSec: 1.1e9}}, // the double nearest 1.1e9, not 1.1*1e9
		{in: "500Mbps", want: lab.Rate{BitsPerSec: 500e6}},
		{in: "64kbps", want: lab.Rate{BitsPerSec: 64e3}},
		{in: "64Kbps", want: lab.Rate{BitsPerSec: 64e3}},
		{in: "800bps", want: lab.Rate{BitsPerSec: 800}},
		{in: "10Tbps", want: lab.Rate{BitsPerSec: lab.MaxBitRate}},

		{in: "", wantErr: "empty"},
		{in: "0", wantErr: "0.01 to 10000000"},
		{in: "0.009", wantErr: "0.01 to 10000000"},
		{in: "10000001", wantErr: "0.01 to 10000000"},
		{in: "-5", wantErr: "use requests per second"},
		{in: "+5", wantErr: "use requests per second"},
		{in: "NaN", wantErr: "use requests per second"},
		{in: "Inf", wantErr: "use requests per second"},
		{in: "1e5", wantErr: "use requests per second"},
		{in: "0x10", wantErr: "use requests per second"},
		{in: "1_000", wantErr: "use requests per second"},
		{in: "1.2.3", wantErr: "use requests per second"},
		{in: ".", wantErr: "use requests per second"},
		{in: "k", wantErr: "use requests per second"},
		{in: "0Gbps", wantErr: "more than 0"},
		{in: "10.1Tbps", wantErr: "at most 10Tbps"},
		{in: "20GBps", wantErr: "bits, not bytes"},
		{in: "20GB/s", wantErr: "bits, not bytes"},
		{in: "20gbps", wantErr: "use requests per second"},
		{in: "Gbps", wantErr: "use requests per second"},
		{in: "1e9bps", wantErr: "use requests per second"},
		{in: strings.Repeat("9", 40), wantErr: "use requests per second"},
	} {
		got, err := lab.ParseRate(tc.in)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("ParseRate(%q): %v", tc.in, err)
		case tc.wantErr == "" && got != tc.want:
			t.Errorf("ParseRate(%q) = %+v, want %+v", tc.in, got, tc.want)
		case tc.wantErr != "" && err == nil:
			t.Errorf("ParseRate(%q) = %+v, want an error with %q", tc.in, got, tc.wantErr)
		case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
			t.Errorf("ParseRate(%q): %v; want %q in it", tc.in, err, tc.wantErr)
		}
	}
}

// A long hostile input is cut in the message: the error stays one line.
func TestParseRateErrorIsShort(t *testing.T) {
	_, err := lab.ParseRate(strings.Repeat("x", 1<<20))
	if err == nil || len(err.Error()) > 400 {
		t.Errorf("error of %d bytes: %.100v", len(err.Error()), err)
	}
}

func TestRateString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"300", "300"}, {"1.5k", "1500"}, {"0.25", "0.25"},
		{"20Gbps", "20Gbps"}, {"1500Mbps", "1.5Gbps"}, {"0.5Gbps", "500Mbps"},
		{"1.1Gbps", "1.1Gbps"}, {"999bps", "999bps"}, {"0.5bps", "0.5bps"},
		{"1234567.891bps", "1.234567891Mbps"}, {"10Tbps", "10Tbps"}, {"0.001kbps", "1bps"},
	} {
		r, err := lab.ParseRate(tc.in)
		if err != nil {
			t.Fatalf("ParseRate(%q): %v", tc.in, err)
		}
		if got := r.String(); got != tc.want {
			t.Errorf("%q prints as %q, want %q", tc.in, got, tc.want)
		}
		back, err := lab.ParseRate(r.String())
		if err != nil || back != r {
			t.Errorf("%q: %q reads back as %+v, %v; want %+v", tc.in, r.String(), back, err, r)
		}
	}
	if s := (lab.Rate{}).String(); s != "" {
		t.Errorf("the zero rate prints %q", s)
	}
}

func TestRateOpsPerSec(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		rate    string
		mean    float64
		want    float64
		wantErr string
	}{
		{rate: "300", mean: 64 * mib, want: 300},
		{rate: "300", mean: 0, want: 300}, // a count needs no size
		{rate: "20Gbps", mean: mib, want: 20e9 / 8 / mib},
		{rate: "8Mbps", mean: 1e6, want: 1},
		{rate: "1kbps", mean: 64 * mib, wantErr: "requests/s: use a rate of 0.01 to 10000000"},
		{rate: "10Tbps", mean: 1, wantErr: "1.25e+12 requests/s"},
		{rate: "20Gbps", mean: 0, wantErr: "cannot convert"},
		{rate: "20Gbps", mean: math.NaN(), wantErr: "cannot convert"},
		{rate: "20Gbps", mean: math.Inf(1), wantErr: "cannot convert"},
	} {
		r, err := lab.ParseRate(tc.rate)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.OpsPerSec(tc.mean)
		switch {
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("%s at %v B: %v, %v; want %v", tc.rate, tc.mean, got, err, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s at %v B: %v, %v; want an error with %q", tc.rate, tc.mean, got, err, tc.wantErr)
		}
	}
	if _, err := (lab.Rate{}).OpsPerSec(1); err == nil {
		t.Error("the zero rate converted")
	}
}

func TestRateJSON(t *testing.T) {
	for _, tc := range []struct {
		r    lab.Rate
		want string
	}{
		{lab.Rate{PerSec: 300}, `{"ops_per_sec":300}`},
		{lab.Rate{BitsPerSec: 20e9}, `{"bits_per_sec":20000000000}`},
		{lab.Rate{}, `{}`},
	} {
		b, err := json.Marshal(tc.r)
		if err != nil || string(b) != tc.want {
			t.Errorf("%+v marshals to %s, %v; want %s", tc.r, b, err, tc.want)
		}
		var back lab.Rate
		if err := json.Unmarshal(b, &back); err != nil || back != tc.r {
			t.Errorf("%s reads back as %+v, %v", b, back, err)
		}
	}
	var r lab.Rate
	if err := json.Unmarshal([]byte(`"20Gbps"`), &r); err != nil || r.BitsPerSec != 20e9 {
		t.Errorf("a string as --rate takes it: %+v, %v", r, err)
	}
	for _, in := range []string{`{"ops_per_sec":-1}`, `{"ops_per_sec":1,"bits_per_sec":8}`, `{"bits_per_sec":1e300}`, `"0"`, `[1]`, `{"ops_per_sec":"x"}`} {
		if err := json.Unmarshal([]byte(in), &r); err == nil {
			t.Errorf("%s read as %+v, want an error", in, r)
		}
	}
}
