package lab_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
)

func openWorkload(t *testing.T, mut func(w *lab.Workload)) lab.Workload {
	t.Helper()
	w := lab.Workload{Host: "198.18.0.1", Connections: 8, Threads: 2, Keyspace: 64, Prefill: true,
		Warmup: lab.Duration(4 * time.Second), Duration: lab.Duration(10 * time.Second), Seed: 7}
	mut(&w)
	return w.Resolve()
}

// Args carries every open-loop field to a remote bench: parsing it back
// gives the same workload, for rates, ramps, mixes and the probe.
func TestArgsRoundTripOpenLoop(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(w *lab.Workload)
	}{
		{"rate, poisson, weighted mix, probe", func(w *lab.Workload) {
			w.Rate = lab.Rate{PerSec: 300}
			w.Arrival = lab.ArrivalPoisson
			w.ValueSz = mustMix(t, "1MiB:60,16MiB:30,64MiB:10")
			w.Probe = lab.Probe{Size: 100, Rate: lab.Rate{PerSec: 500}}
		}},
		{"bit rate, queue limit", func(w *lab.Workload) {
			w.Rate = lab.Rate{BitsPerSec: 20e9}
			w.QueueLimit = lab.Duration(250 * time.Millisecond)
		}},
		{"ramp over a range", func(w *lab.Workload) {
			w.Ramp = lab.Ramp{From: lab.Rate{PerSec: 50}, To: lab.Rate{PerSec: 800}, Steps: 8, Step: lab.Duration(2 * time.Second)}
			w.ValueSz = mustMix(t, "1MiB-64MiB")
			w.Duration = 0 // the ramp's length
		}},
		{"probe beside a closed loop", func(w *lab.Workload) {
			w.Probe = lab.Probe{Size: 4096, Rate: lab.Rate{PerSec: 200}}
		}},
	} {
		w := openWorkload(t, tc.mut)
		if err := fields.Validate(w); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		var got lab.Workload
		fields.BindFlags(fs, &got)
		if err := fs.Parse(fields.Args(w)); err != nil {
			t.Fatalf("%s: %v (args %q)", tc.name, err, fields.Args(w))
		}
		if !reflect.DeepEqual(got.Resolve(), w) {
			t.Errorf("%s: round trip:\n got %+v\nwant %+v", tc.name, got.Resolve(), w)
		}
	}
}

// A closed-loop workload of one size stores exactly what it stored before
// open loop existed: no new keys, the value size a byte count.
func TestClosedLoopWorkloadJSONIsUnchanged(t *testing.T) {
	b, err := json.Marshal(lab.Workload{ValueSz: lab.OneSize(8 << 20)}.Resolve())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"rate", "ramp", "arrival", "queue_limit", "queue_limit_s", "probe"} {
		if _, ok := m[k]; ok {
			t.Errorf("a closed-loop workload stores %q: %s", k, b)
		}
	}
	if string(m["value_size"]) != "8388608" {
		t.Errorf("value_size stored as %s", m["value_size"])
	}
}

// Resolve fills what open loop needs and nothing when it is closed loop:
// the arrival and queue limit defaults, and a ramp's window is the ramp.
func TestResolveOpenLoop(t *testing.T) {
	closed := lab.Workload{}.Resolve()
	if closed.Arrival != "" || closed.QueueLimit != 0 {
		t.Errorf("closed loop resolved with arrival %q, queue limit %s", closed.Arrival, closed.QueueLimit)
	}
	rate := lab.Workload{Rate: lab.Rate{PerSec: 100}}.Resolve()
	if rate.Arrival != lab.ArrivalConstant || rate.QueueLimit.D() != lab.DefaultQueueLimit || rate.Duration.D() != lab.DefaultDuration {
		t.Errorf("a rate resolved to arrival %q, queue limit %s, duration %s", rate.Arrival, rate.QueueLimit, rate.Duration)
	}
	probe := lab.Workload{Probe: lab.Probe{Size: 100, Rate: lab.Rate{PerSec: 100}}}.Resolve()
	if probe.Arrival != lab.ArrivalConstant || probe.QueueLimit.D() != lab.DefaultQueueLimit {
		t.Errorf("a probe resolved to arrival %q, queue limit %s", probe.Arrival, probe.QueueLimit)
	}
	ramp := lab.Workload{Ramp: lab.Ramp{From: lab.Rate{PerSec: 50}, To: lab.Rate{PerSec: 800}, Steps: 8, Step: lab.Duration(10 * time.Second)}}.Resolve()
	if ramp.Duration.D() != 80*time.Second {
		t.Errorf("a ramp of 8 x 10s resolved to a %s window", ramp.Duration)
	}
}

// Every open-loop bound names its flag, for workloads from flags, from
// campaigns and from records alike.
func TestOpenLoopBounds(t *testing.T) {
	probe := lab.Probe{Size: 100, Rate: lab.Rate{PerSec: 200}}
	ramp := lab.Ramp{From: lab.Rate{PerSec: 50}, To: lab.Rate{PerSec: 800}, Steps: 4, Step: lab.Duration(time.Second)}
	for _, tc := range []struct {
		name string
		mut  func(w *lab.Workload)
		flag string
	}{
		{"rate and ramp", func(w *lab.Workload) { w.Rate = lab.Rate{PerSec: 10}; w.Ramp = ramp }, "--ramp"},
		{"rate NaN", func(w *lab.Workload) { w.Rate = lab.Rate{PerSec: -1} }, "--rate"},
		{"bit rate too slow for the values", func(w *lab.Workload) { w.Rate = lab.Rate{BitsPerSec: 1} }, "--rate"},
		{"ramp of bits past the request bound", func(w *lab.Workload) {
			w.Ramp = lab.Ramp{From: lab.Rate{BitsPerSec: 1e12}, To: lab.Rate{BitsPerSec: 1e13}, Steps: 2, Step: lab.Duration(time.Second)}
			w.ValueSz = lab.OneSize(48)
		}, "--ramp"},
		{"ramp with another window", func(w *lab.Workload) { w.Ramp = ramp; w.Duration = lab.Duration(time.Minute) }, "-d/--duration"},
		{"arrival alone", func(w *lab.Workload) { w.Arrival = lab.ArrivalPoisson }, "--arrival"},
		{"arrival unknown", func(w *lab.Workload) { w.Rate = lab.Rate{PerSec: 10}; w.Arrival = "bursty" }, "--arrival"},
		{"queue limit alone", func(w *lab.Workload) { w.QueueLimit = lab.Duration(time.Second) }, "--queue-limit"},
		{"queue limit too long", func(w *lab.Workload) {
			w.Rate = lab.Rate{PerSec: 10}
			w.QueueLimit = lab.Duration(2 * time.Hour)
		}, "--queue-limit"},
		{"queue limit negative", func(w *lab.Workload) { w.Rate = lab.Rate{PerSec: 10}; w.QueueLimit = -1 }, "--queue-limit"},
		{"probe without warmup", func(w *lab.Workload) { w.Probe = probe; w.Warmup = lab.Duration(time.Second) }, "--probe"},
		{"probe size", func(w *lab.Workload) { w.Probe = lab.Probe{Size: 5 << 30, Rate: probe.Rate} }, "--probe"},
		{"probe below the verify header", func(w *lab.Workload) { w.Probe = lab.Probe{Size: 20, Rate: probe.Rate} }, "--probe"},
		{"probe keys do not fit the key size", func(w *lab.Workload) { w.Probe = probe; w.Keyspace, w.KeySize = 90, 6 }, "--key-size"},
		{"probe on valkey-go", func(w *lab.Workload) { w.Probe = probe; w.Engine = lab.EngineValkeyGo }, "--engine"},
		{"open loop on valkey-go with pipelining", func(w *lab.Workload) {
			w.Rate = lab.Rate{PerSec: 10}
			w.Engine, w.Pipeline = lab.EngineValkeyGo, 4
		}, "--engine"},
		{"mix below the verify header", func(w *lab.Workload) { w.ValueSz = mustMix(t, "10B:1,1MiB:1") }, "-s/--value-size"},
		{"mix of a hostile record", func(w *lab.Workload) { w.ValueSz = lab.SizeMix{Lo: 5, Hi: 1} }, "-s/--value-size"},
	} {
		w := lab.Workload{Connections: 4, Threads: 1, Warmup: lab.Duration(4 * time.Second)}
		tc.mut(&w)
		w = w.Resolve()
		err := fields.Validate(w)
		fe, ok := err.(*fields.FieldError)
		if !ok || fe.Field != tc.flag {
			t.Errorf("%s: want an error naming %s, got %v", tc.name, tc.flag, err)
		}
	}
	for _, good := range []func(w *lab.Workload){
		func(w *lab.Workload) { w.Rate = lab.Rate{PerSec: 10}; w.Engine = lab.EngineValkeyGo },
		func(w *lab.Workload) { w.Ramp = ramp; w.Probe = probe; w.Arrival = lab.ArrivalPoisson },
		func(w *lab.Workload) { w.ValueSz = mustMix(t, "1MiB-64MiB"); w.Rate = lab.Rate{BitsPerSec: 5e9} },
	} {
		w := lab.Workload{Connections: 4, Threads: 1, Warmup: lab.Duration(4 * time.Second)}
		good(&w)
		if err := fields.Validate(w.Resolve()); err != nil {
			t.Errorf("%+v: %v", w, err)
		}
	}
}

func TestParseProbe(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want lab.Probe
		err  string
	}{
		{"100B@500", lab.Probe{Size: 100, Rate: lab.Rate{PerSec: 500}}, ""},
		{" 4KiB@1.5k ", lab.Probe{Size: 4096, Rate: lab.Rate{PerSec: 1500}}, ""},
		{"100B@1Mbps", lab.Probe{Size: 100, Rate: lab.Rate{BitsPerSec: 1e6}}, ""},
		{"100B", lab.Probe{}, "want SIZE@RATE"},
		{"@500", lab.Probe{}, "SIZE"},
		{"100B@", lab.Probe{}, "RATE"},
		{"100B@0", lab.Probe{}, "RATE"},
		{"8GiB@10", lab.Probe{}, "SIZE"},
		{"100B@1bps", lab.Probe{}, "RATE"}, // 0.00125 requests/s
		{strings.Repeat("9", 5000) + "@1", lab.Probe{}, "longer than"},
	} {
		got, err := lab.ParseProbe(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || len(err.Error()) > 300):
			t.Errorf("%q: %v; want an error with %q", tc.in, err, tc.err)
		}
		if err == nil && got.String() != "" {
			back, err := lab.ParseProbe(got.String())
			if err != nil || back != got {
				t.Errorf("%q prints %q, which reads back as %+v, %v", tc.in, got.String(), back, err)
			}
		}
	}
	var p lab.Probe
	if err := json.Unmarshal([]byte(`{"size":100,"rate":{"ops_per_sec":-3}}`), &p); err == nil {
		t.Error("a record's probe with a negative rate was read")
	}
}
