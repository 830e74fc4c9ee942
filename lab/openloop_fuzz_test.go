package lab_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
)

// The parsers of --rate, --ramp, -s and the records that carry them take
// anything without panicking, and what they accept prints back to itself
// and holds to the bounds. Run long with go test -fuzz=FuzzParseRate
// ./lab/ (and so on); go test runs the seeds below.

// maxErrLen bounds an error message however hostile the input: each
// quotes at most a cut of it.
const maxErrLen = 1024

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"300", "1.5k", "20Gbps", "0.5bps", "10Tbps", "0", "-1", "NaN", "1e9", "20GBps", ".5", "9.", "1..2kbps"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := lab.ParseRate(s)
		if err != nil {
			if len(err.Error()) > maxErrLen {
				t.Fatalf("a %d-byte error", len(err.Error()))
			}
			return
		}
		if r.IsZero() || (r.PerSec != 0 && (r.PerSec < lab.MinRate || r.PerSec > lab.MaxRate)) || r.BitsPerSec < 0 || r.BitsPerSec > lab.MaxBitRate {
			t.Fatalf("%q accepted as %+v", s, r)
		}
		back, err := lab.ParseRate(r.String())
		if err != nil || back != r {
			t.Fatalf("%q: %q reads back as %+v, %v; want %+v", s, r.String(), back, err, r)
		}
		if ops, err := r.OpsPerSec(1 << 20); err == nil && (ops < lab.MinRate || ops > lab.MaxRate) {
			t.Fatalf("%q converts to %v requests/s", s, ops)
		}
	})
}

func FuzzParseRamp(f *testing.F) {
	for _, s := range []string{"50:800:8:10s", "1Gbps:20Gbps:8:1m", "800:50:2:1s", "1:2:1000:86s", "50:800:8", "::::", "1:1:2:1h30m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := lab.ParseRamp(s)
		if err != nil {
			if len(err.Error()) > maxErrLen {
				t.Fatalf("a %d-byte error", len(err.Error()))
			}
			return
		}
		if r.Steps < lab.MinRampSteps || r.Steps > lab.MaxRampSteps || r.Step.D() < lab.MinRampStep || r.Length() > lab.MaxDuration {
			t.Fatalf("%q accepted as %+v", s, r)
		}
		back, err := lab.ParseRamp(r.String())
		if err != nil || back != r {
			t.Fatalf("%q: %q reads back as %+v, %v", s, r.String(), back, err)
		}
		b, err := json.Marshal(r)
		var fromJSON lab.Ramp
		if err != nil || json.Unmarshal(b, &fromJSON) != nil || fromJSON != r {
			t.Fatalf("%q: %s reads back as %+v", s, b, fromJSON)
		}
	})
}

func FuzzParseSizeMix(f *testing.F) {
	for _, s := range []string{"8MiB", "1MiB:60,16MiB:30,64MiB:10", "1MiB-64MiB", "100B-1000B", "1:1,2:1", "0", "5GiB", "-", ",", ":", "1MiB:1-2MiB", "1.5KiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := lab.ParseSizeMix(s)
		// One size is today's -s: the mix agrees with Size wherever Size
		// reads it and the size is within bounds.
		if !strings.ContainsAny(s, ":,-") {
			if sz, serr := lab.ParseSize(s); serr == nil && sz >= 1 && sz <= lab.MaxValueSize {
				if got, ok := m.Single(); err != nil || !ok || got != sz || m.String() != sz.String() {
					t.Fatalf("%q: Size reads %v, the mix %+v, %v", s, sz, m, err)
				}
			}
		}
		if err != nil {
			if len(err.Error()) > maxErrLen {
				t.Fatalf("a %d-byte error", len(err.Error()))
			}
			return
		}
		back, err := lab.ParseSizeMix(m.String())
		if err != nil || !reflect.DeepEqual(back, m) {
			t.Fatalf("%q: %q reads back as %+v, %v", s, m.String(), back, err)
		}
		checkMix(t, s, m)
	})
}

// checkMix holds an accepted mix to its promises: keys get sizes within
// bounds that have a class, and it stores and reads back as itself.
func checkMix(t *testing.T, in string, m lab.SizeMix) {
	t.Helper()
	if m.Min() < 1 || m.Max() > lab.MaxValueSize || len(m.Parts) > lab.MaxMixParts {
		t.Fatalf("%q accepted as %+v", in, m)
	}
	for key := range uint32(64) {
		sz := m.SizeFor(1, key)
		if sz < m.Min() || sz > m.Max() || m.Class(sz) < 0 || m.Class(sz) >= len(m.Classes()) {
			t.Fatalf("%q: key %d has size %v, class %d of %v", in, key, sz, m.Class(sz), m.Classes())
		}
	}
	b, err := json.Marshal(m)
	var fromJSON lab.SizeMix
	if err != nil || json.Unmarshal(b, &fromJSON) != nil || !reflect.DeepEqual(fromJSON, m) {
		t.Fatalf("%q: %s reads back as %+v", in, b, fromJSON)
	}
}

// Records are untrusted: whatever JSON holds, reading it never panics
// and what it accepts is a valid mix, rate or ramp.
func FuzzOpenLoopJSON(f *testing.F) {
	for _, s := range []string{
		`1048576`, `"8MiB"`, `{"kind":"weights","sizes":[{"size":1,"weight":1},{"size":2,"weight":3}]}`,
		`{"kind":"log_uniform","min":1,"max":1e9}`, `{"ops_per_sec":5}`, `{"bits_per_sec":1e9}`,
		`{"from":{"ops_per_sec":50},"to":{"ops_per_sec":800},"steps":8,"step":"10s"}`, `null`, `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m lab.SizeMix
		if json.Unmarshal(b, &m) == nil && !m.IsZero() {
			checkMix(t, string(b), m)
		}
		var r lab.Rate
		if json.Unmarshal(b, &r) == nil && !r.IsZero() {
			if back, err := lab.ParseRate(r.String()); err != nil || back != r {
				t.Fatalf("%s read as rate %+v, which prints %q (%v)", b, r, r.String(), err)
			}
		}
		var rp lab.Ramp
		if json.Unmarshal(b, &rp) == nil && !rp.IsZero() {
			if back, err := lab.ParseRamp(rp.String()); err != nil || back != rp {
				t.Fatalf("%s read as ramp %+v, which prints %q (%v)", b, rp, rp.String(), err)
			}
		}
	})
}
