package lab_test

import (
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

// Issue 25: the idle p99 came from 150 samples. The probe runs alone long
// enough for 1000 GETs and a tenth to spare, at least the warmup's second
// quarter, at most 30 s; the main load's warmup of half the asked one
// follows.
func TestProbePhases(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name                string
		probe               string
		warmup              time.Duration
		idle, main, warmEnd time.Duration
		planned             float64
	}{
		{"no probe", "", 3 * s, 0, 0, 3 * s, 0},
		{"200/s needs 5.5 s alone", "100B@200", 2 * s, s / 2, 6 * s, 7 * s, 1100},
		{"5000/s fills the quarter", "100B@5000", 4 * s, s, 2 * s, 4 * s, 5000},
		{"1100/s exactly a quarter", "100B@1100", 4 * s, s, 2 * s, 4 * s, 1100},
		{"5/s cannot in 30 s", "100B@5", 2 * s, s / 2, s/2 + 30*s, 31*s + s/2, 150},
		{"a bit rate", "1KiB@8192Kbps", 2 * s, s / 2, s/2 + 1100*time.Millisecond, s/2 + 1100*time.Millisecond + s, 1100},
	} {
		w := lab.Workload{Warmup: lab.Duration(tc.warmup)}
		if tc.probe != "" {
			p, err := lab.ParseProbe(tc.probe)
			if err != nil {
				t.Fatal(err)
			}
			w.Probe = p
		}
		idle, main, end, planned := w.ProbePhases()
		if idle != tc.idle || main != tc.main || end != tc.warmEnd || planned < tc.planned-1e-6 || planned > tc.planned+1e-6 {
			t.Errorf("%s: idle %s-%s, warmup ends %s, %v planned; want %s-%s, %s, %v", tc.name, idle, main, end, planned, tc.idle, tc.main, tc.warmEnd, tc.planned)
		}
	}
}

// What the main load added to the probe's p99 is a latency, or no
// measurable effect: a band holding zero never reads as a negative number.
func TestAddedP99(t *testing.T) {
	for _, tc := range []struct {
		name                                   string
		load, loadLo, loadHi, idle, idLo, idHi float64
		added, lo, hi                          float64
		measurable                             bool
	}{
		// Issue 25: 64 MiB paced at 3 Gbps beside 100B@200 read -6.88 ms,
		// band -12.6 to +4.7 ms.
		{"issue 25", 5000, 4000, 9000, 11880, 4300, 16600, 0, -12600, 4700, false},
		{"above zero", 5300, 5000, 9300, 300, 280, 400, 5000, 4600, 9020, true},
		{"the band touches zero", 1300, 1000, 1500, 300, 250, 1000, 0, 0, 1250, false},
		{"under load faster", 200, 190, 210, 900, 800, 1000, 0, -810, -590, false},
	} {
		added, lo, hi, m := lab.AddedP99(tc.load, tc.loadLo, tc.loadHi, tc.idle, tc.idLo, tc.idHi)
		if added != tc.added || lo != tc.lo || hi != tc.hi || m != tc.measurable {
			t.Errorf("%s: added %v [%v, %v] measurable %v; want %v [%v, %v] %v", tc.name, added, lo, hi, m, tc.added, tc.lo, tc.hi, tc.measurable)
		}
		if added < 0 {
			t.Errorf("%s: a negative added latency %v", tc.name, added)
		}
	}
}
