package keys

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestParse(t *testing.T) {
	good := []struct {
		in   string
		want Dist
	}{
		{"uniform", Dist{Kind: Uniform}},
		{" sequential ", Dist{Kind: Sequential}},
		{"zipf:0.9", Dist{Kind: Zipf, Alpha: 0.9}},
		{"zipf:1", Dist{Kind: Zipf, Alpha: 1}},
		{"zipf:1e-9", Dist{Kind: Zipf, Alpha: 1e-9}},
		{"zipf:10", Dist{Kind: Zipf, Alpha: 10}},
		{"gaussian:0.5,0.1", Dist{Kind: Gaussian, Mean: 0.5, SD: 0.1}},
		{"gaussian:0, 1", Dist{Kind: Gaussian, Mean: 0, SD: 1}},
		{"gaussian:1,1e-6", Dist{Kind: Gaussian, Mean: 1, SD: 1e-6}},
	}
	for _, c := range good {
		got, err := Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	bad := []struct{ in, says string }{
		{"", "unknown distribution"},
		{"pareto", "unknown distribution"},
		{"uniform:1", "takes no parameter"},
		{"sequential:", "takes no parameter"},
		{"zipf", "needs its exponent"},
		{"zipf:", "not a number"},
		{"zipf:0", "above 0"},
		{"zipf:-1", "above 0"},
		{"zipf:NaN", "above 0"},
		{"zipf:Inf", "above 0"},
		{"zipf:-Inf", "above 0"},
		{"zipf:10.5", "at most 10"},
		{"zipf:1e300", "at most 10"},
		{"zipf:0.9,1", "not a number"},
		{"gaussian", "needs MEAN,SD"},
		{"gaussian:0.5", "needs MEAN,SD"},
		{"gaussian:0.5,0", "sd"},
		{"gaussian:0.5,-0.1", "sd"},
		{"gaussian:0.5,NaN", "sd"},
		{"gaussian:0.5,Inf", "sd"},
		{"gaussian:0.5,1.5", "sd"},
		{"gaussian:NaN,0.1", "mean"},
		{"gaussian:-0.1,0.1", "mean"},
		{"gaussian:1.1,0.1", "mean"},
		{"gaussian:Inf,0.1", "mean"},
		{"gaussian:0.5,0.1,3", "not a number"},
		{"gaussian:250,10", "fraction of the keyspace"},
	}
	for _, c := range bad {
		d, err := Parse(c.in)
		if err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", c.in, d)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.says) || !strings.Contains(msg, "use uniform") || strings.Contains(msg, "\n") {
			t.Errorf("Parse(%q): %q; want one line saying %q and the forms", c.in, msg, c.says)
		}
	}
}

// On the command line the error is one line naming the flag.
func TestFlagErrorNamesTheFlag(t *testing.T) {
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	d := Dist{Kind: Uniform}
	fs.Var(&d, "key-dist", Forms)
	err := fs.Parse([]string{"--key-dist", "zipf:0"})
	if err == nil || !strings.Contains(err.Error(), "--key-dist") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("--key-dist zipf:0: %v; want one line naming --key-dist", err)
	}
	if err := fs.Parse([]string{"--key-dist", "gaussian:0.25,0.05"}); err != nil || d != (Dist{Kind: Gaussian, Mean: 0.25, SD: 0.05}) {
		t.Fatalf("--key-dist gaussian:0.25,0.05: %+v, %v", d, err)
	}
}

// Whatever the text, Parse answers at once with a valid Dist that prints
// back to itself and samples inside the keyspace, or with one line.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"uniform", "sequential", "zipf:0.9", "zipf:1e-300", "zipf:0x1p-3",
		"gaussian:0.5,0.1", "gaussian:1,1", "gaussian:,", "zipf:NaN", "gaussian:0.5,1e-320"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("Parse(%q): error of several lines: %q", s, err)
			}
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("Parse(%q) = %+v, which does not validate: %v", s, d, err)
		}
		back, err := Parse(d.String())
		if err != nil || back != d {
			t.Fatalf("Parse(%q) = %+v prints %q, which reads back as %+v, %v", s, d, d.String(), back, err)
		}
		smp, err := New(d, 1000, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatalf("New(%+v): %v", d, err)
		}
		for range 100 {
			if k := smp.Next(); k >= 1000 {
				t.Fatalf("%s drew key %d of 1000", d, k)
			}
		}
	})
}
