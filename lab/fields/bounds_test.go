package fields_test

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/lab/keys"
)

// --key-dist takes zipf for any exponent above 0 (the sampler is exact
// there, lab/keys) and a gaussian; NaN, infinities and out-of-range
// parameters are refused, read through the bench flag as a user gives them.
func TestKeyDistFlagIsBounded(t *testing.T) {
	parse := func(in string) (lab.Workload, error) {
		var w lab.Workload
		fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
		fields.BindFlags(fs, &w)
		err := fs.Parse([]string{"--key-dist", in})
		if err == nil {
			err = fields.Validate(w.Resolve())
		}
		return w, err
	}
	for _, in := range []string{"zipf:NaN", "zipf:Inf", "zipf:-Inf", "zipf:0", "zipf:-1", "zipf:10.5", "zipf:1e300", "uniform:NaN",
		"gaussian:0.5", "gaussian:NaN,0.1", "gaussian:0.5,0", "gaussian:1.5,0.1", "gaussian:0.5,Inf"} {
		if w, err := parse(in); err == nil {
			t.Errorf("--key-dist %s accepted as %v, want an error", in, w.KeyDist)
		} else if !strings.Contains(err.Error(), "key-dist") {
			t.Errorf("--key-dist %s: %v; want the flag named", in, err)
		}
	}
	for _, in := range []string{"zipf:0.5", "zipf:0.9", "zipf:1", "zipf:1.001", "zipf:1.4", "zipf:10", "gaussian:0.5,0.1", "sequential"} {
		if w, err := parse(in); err != nil {
			t.Errorf("--key-dist %s: %v", in, err)
		} else if w.KeyDist.String() != in {
			t.Errorf("--key-dist %s reads back as %q", in, w.KeyDist.String())
		}
	}
}

// Every bound names its flag, also for workloads built in code (the sweeps
// planner), which never went through the flag parsers.
func TestValidateBounds(t *testing.T) {
	base := lab.Workload{Connections: 32, Threads: 2}.Resolve()
	for _, tc := range []struct {
		name string
		mut  func(*lab.Workload)
		flag string
	}{
		{"connections", func(w *lab.Workload) { w.Connections = fields.MaxConnections + 1 }, "-c/--connections"},
		{"threads", func(w *lab.Workload) { w.Connections, w.Threads = 2000, 2000 }, "-t/--threads"},
		{"in flight", func(w *lab.Workload) { w.Connections, w.Pipeline = 1024, 128 }, "-P/--pipeline"},
		{"keyspace past 32 bits", func(w *lab.Workload) { w.Keyspace, w.KeySize = 1<<32+5, 20 }, "-n/--keyspace"},
		{"keyspace", func(w *lab.Workload) { w.Keyspace, w.KeySize = fields.MaxKeyspace+1, 20 }, "-n/--keyspace"},
		{"duration", func(w *lab.Workload) { w.Duration = lab.Duration(25 * time.Hour) }, "-d/--duration"},
		{"warmup", func(w *lab.Workload) { w.Warmup = lab.Duration(math.MaxInt64) }, "--warmup"},
		{"request timeout", func(w *lab.Workload) { w.RequestTimeout = lab.Duration(2 * time.Hour) }, "--request-timeout"},
		{"series memory", func(w *lab.Workload) { w.Connections, w.Threads, w.Duration = 64, 64, lab.Duration(3*time.Hour) }, "-d/--duration"},
		{"ratio overflow", func(w *lab.Workload) { w.Ratio = lab.Ratio{Gets: math.MaxInt, Sets: 1} }, "-r/--ratio"},
		{"zipf NaN", func(w *lab.Workload) { w.KeyDist = keys.Dist{Kind: keys.Zipf, Alpha: math.NaN()} }, "--key-dist"},
		{"gaussian sd NaN", func(w *lab.Workload) { w.KeyDist = keys.Dist{Kind: keys.Gaussian, Mean: 0.5, SD: math.NaN()} }, "--key-dist"},
		{"cpu too high", func(w *lab.Workload) { w.CPUList = lab.CPUList{0, lab.MaxCPUs} }, "--cpu-list"},
		{"cpu twice", func(w *lab.Workload) { w.CPUList = lab.CPUList{3, 3} }, "--cpu-list"},
		// A body by reference under TLS, or with valkey-go: bad flags
		// (exit 2) before a connection opens, not a setup failure.
		{"splice under tls", func(w *lab.Workload) { w.TLS.On, w.Send = true, lab.SendSplice }, "--send"},
		{"zerocopy under tls", func(w *lab.Workload) { w.TLS.On, w.Send = true, lab.SendZerocopy }, "--send"},
		{"splice with valkey-go", func(w *lab.Workload) { w.Engine, w.Send = lab.EngineValkeyGo, lab.SendSplice }, "--send"},
	} {
		w := base
		tc.mut(&w)
		err := fields.Validate(w)
		fe, ok := err.(*fields.FieldError)
		if !ok || fe.Field != tc.flag {
			t.Errorf("%s: want an error naming %s, got %v", tc.name, tc.flag, err)
		}
	}
	// The edges themselves are fine.
	edge := base
	edge.Connections, edge.Threads, edge.Pipeline = fields.MaxConnections, fields.MaxThreads, fields.MaxInFlight/fields.MaxConnections
	edge.Keyspace, edge.KeySize = fields.MaxKeyspace, 20
	edge.Duration, edge.Warmup, edge.RequestTimeout = lab.Duration(fields.MaxThreadSeconds/fields.MaxThreads*time.Second), lab.Duration(lab.MaxDuration), lab.Duration(fields.MaxRequestTimeout)
	if err := fields.Validate(edge); err != nil {
		t.Errorf("the bounds themselves: %v", err)
	}
}

// CheckField holds one value, as a campaign lists it, to its field's own
// bounds: a zero is a zero (not "the default"), and bounds between fields
// wait for the whole workload.
func TestCheckField(t *testing.T) {
	for _, tc := range []struct {
		field string
		w     lab.Workload
		flag  string // the error's field, or "" for none
	}{
		{"connections", lab.Workload{}, "-c/--connections"},
		{"connections", lab.Workload{Connections: 8}, ""},
		{"threads", lab.Workload{Threads: 64}, ""}, // more threads than -c: Validate's to say
		{"threads", lab.Workload{Threads: fields.MaxThreads + 1}, "-t/--threads"},
		{"pipeline", lab.Workload{Pipeline: fields.MaxPipeline}, ""},
		{"pipeline", lab.Workload{Pipeline: fields.MaxPipeline + 1}, "-P/--pipeline"},
		{"key-size", lab.Workload{KeySize: 4}, "--key-size"}, // "key:" alone names no key
		{"key-size", lab.Workload{KeySize: 5}, ""},
		{"key-size", lab.Workload{KeySize: fields.MaxKeySize + 1}, "--key-size"},
		{"value-size", lab.Workload{ValueSz: lab.OneSize(1)}, ""}, // --verify against -s is Validate's
		{"warmup", lab.Workload{}, ""},
		{"duration", lab.Workload{}, "-d/--duration"},
		{"engine", lab.Workload{Engine: "turbo"}, "--engine"},
		{"prefill", lab.Workload{}, ""},
	} {
		err := fields.CheckField(tc.w, tc.field)
		fe, _ := err.(*fields.FieldError)
		switch {
		case tc.flag == "" && err != nil:
			t.Errorf("%s of %+v: %v", tc.field, tc.w, err)
		case tc.flag != "" && (fe == nil || fe.Field != tc.flag || fe.Name() != tc.field):
			t.Errorf("%s of %+v: %v, want an error naming %s", tc.field, tc.w, err, tc.flag)
		}
	}
}

// The bench flags' defaults are Resolve's, bar -t (left to the host that
// runs) and --seed (1: a seed of 0 is a seed).
func TestFlagDefaultsAreResolves(t *testing.T) {
	var w lab.Workload
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	fields.BindFlags(fs, &w)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	want := lab.Workload{}.Resolve()
	want.Threads, want.Seed = 0, 1
	if !reflect.DeepEqual(w, want) {
		t.Errorf("flag defaults\n %+v\nResolve's\n %+v", w, want)
	}
}

func TestValidateNamesTheFlag(t *testing.T) {
	base := lab.Workload{}.Resolve()
	for _, tc := range []struct {
		mut  func(*lab.Workload)
		flag string
	}{
		{func(w *lab.Workload) { w.Port = 70000 }, "-p/--port"},
		{func(w *lab.Workload) { w.Connections = 0 }, "-c/--connections"},
		{func(w *lab.Workload) { w.Threads = w.Connections + 1 }, "-t/--threads"},
		{func(w *lab.Workload) { w.Keyspace = 1000; w.KeySize = 6 }, "--key-size"},
		{func(w *lab.Workload) { w.ValueSz = lab.OneSize(10) }, "-s/--value-size"},
		{func(w *lab.Workload) { w.Pipeline = 0 }, "-P/--pipeline"},
		{func(w *lab.Workload) { w.Engine = "memtier" }, "--engine"},
		{func(w *lab.Workload) { w.Verify = "some" }, "--verify"},
		{func(w *lab.Workload) { w.KeyDist = keys.Dist{Kind: keys.Zipf, Alpha: 0} }, "--key-dist"},
		{func(w *lab.Workload) { w.KeyDist = keys.Dist{Kind: keys.Gaussian, Mean: 0.5} }, "--key-dist"},
	} {
		w := base
		tc.mut(&w)
		err := fields.Validate(w)
		fe, ok := err.(*fields.FieldError)
		if !ok || fe.Field != tc.flag {
			t.Errorf("want an error naming %s, got %v", tc.flag, err)
		}
	}
	if err := fields.Validate(base); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}
