package export

import (
	"strconv"
	"testing"

	"github.com/linerate/linerate/lab"
)

// The cell × op rows carry how the record judged its figures: the open
// loop's accounting and which condition of the verdict failed, the knee's
// floor, the mix as the keyspace realized it, the probe's idle phase, the
// MEMORY USAGE sample and the window's edge bias; a cell that measured
// none of it leaves them empty.
func TestJudgedCellColumns(t *testing.T) {
	dir, cells, _ := pacedRun(t)
	rows := rowsBy(t, export(t, readRun(t, dir), Options{Format: CSV}))
	mix := cells["valkey-9.1.2/mix/r1"].Result.SizeMix
	const rate, ramp, mixGet, failed = "valkey-9.1.2/GET/16MiB/rate300/r1 GET", "valkey-9.1.2/GET/1MiB/ramp/r1 GET", "valkey-9.1.2/mix/r1 GET", "valkey-9.1.2/GET/1MiB/ramp/r2 GET"
	checks := []cellCheck{
		{rate, "due", "1200"},
		{rate, "completed", "1189"},
		{rate, "failed", "1"},
		{rate, "unsent", "10"},
		{rate, "lateness_slope", "0.0004"},
		{rate, "not_sustainable_by", ""}, // sustained
		{rate, "probe_idle_samples", "100"},
		{rate, "probe_idle_s", "5.5"},
		{rate, "probe_idle_short", "true"},
		{rate, "probe_no_effect", "false"},
		{rate, "memory_usage_keys", "8"},
		{rate, "knee_floor_step", ""}, // no ramp
		{rate, "size_mix_mean_bytes", ""},

		{ramp, "due", "3640"},
		{ramp, "unsent", "200"},
		{ramp, "lateness_slope", "0.0151"},
		{ramp, "not_sustainable_by", "rate+queue+dropped"},
		{ramp, "knee_p50_ratio", "2.333333333"},
		{ramp, "knee_lateness_slope", "0"},
		{ramp, "knee_floor_step", "0"},
		{ramp, "knee_floor_p99_ms", "1.3"},
		{ramp, "probe_idle_s", ""},
		{ramp, "memory_usage_keys", ""},

		{mixGet, "size_mix_mean_bytes", sig(mix.Mean)},
		{mixGet, "size_mix_strays", strconv.FormatBool(mix.Strays())},
		{mixGet, "not_sustainable_by", ""},

		{failed, "due", ""},
		{failed, "not_sustainable_by", ""},
		{failed, "edge_bias_by", ""},
	}
	checkCells(t, rows, checks)
}

// An op's edge bias is judged from its figures, so a record older than
// the judgement is judged too: the sample's 64 MiB cells (4 s windows)
// mostly have one, its 1 MiB cells none.
func TestEdgeBiasColumns(t *testing.T) {
	run := readRun(t, sampleDir)
	biased := map[string]int{}
	for _, r := range parseCSV(t, export(t, run, Options{Format: CSV})) {
		rec := run.Cells[r["cell_id"]]
		var want *lab.EdgeBias
		for _, e := range lab.EdgeBiasOf(rec.Result) {
			if string(e.Op) == r["op"] {
				want = &e
			}
		}
		switch {
		case want == nil && (r["edge_bias_by"] != "" || r["edge_bias_needs_s"] != ""):
			t.Errorf("%s: edge bias %q, needs %q, want none", r["cell_id"], r["edge_bias_by"], r["edge_bias_needs_s"])
		case want != nil && (r["edge_bias_by"] != want.By || r["edge_bias_needs_s"] != csvValue(want.Needs.Seconds())):
			t.Errorf("%s: edge bias %q, needs %q, want %+v", r["cell_id"], r["edge_bias_by"], r["edge_bias_needs_s"], *want)
		}
		if r["edge_bias_by"] != "" {
			biased[r["value_size"]]++
		}
	}
	if biased["67108864"] == 0 || biased["1048576"] != 0 {
		t.Errorf("edge-biased rows by value size %v: want some of 64 MiB, none of 1 MiB", biased)
	}
}

// --steps rows carry each step's unsent requests, queue growth and edge
// bias: the fixture's last step (p99 700 ms in a 2 s step) ran on into
// the next and would need 7 s steps.
func TestJudgedStepColumns(t *testing.T) {
	dir, _, _ := pacedRun(t)
	rows := parseCSV(t, export(t, readRun(t, dir), Options{Format: CSV, Steps: true}))
	want := []struct{ unsent, slope, edge, needs string }{
		{"0", "0", "false", ""}, {"0", "0", "false", ""}, {"0", "0", "false", ""}, {"200", "0.0625", "true", "7"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d step rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		r := rows[i]
		if r["unsent"] != w.unsent || r["lateness_slope"] != w.slope || r["edge_bias"] != w.edge || r["edge_bias_needs_s"] != w.needs {
			t.Errorf("step %d: unsent %q lateness_slope %q edge_bias %q edge_bias_needs_s %q, want %+v",
				i, r["unsent"], r["lateness_slope"], r["edge_bias"], r["edge_bias_needs_s"], w)
		}
	}
}

// --sizes rows carry their class as the keyspace realized it beside what
// the mix asked.
func TestJudgedSizeColumns(t *testing.T) {
	dir, cells, _ := pacedRun(t)
	mix := cells["valkey-9.1.2/mix/r1"].Result.SizeMix
	rows := parseCSV(t, export(t, readRun(t, dir), Options{Format: CSV, Sizes: true}))
	if len(rows) != 4 {
		t.Fatalf("%d size rows, want 2 ops × 2 classes", len(rows))
	}
	for _, r := range rows {
		var c *lab.RealizedClass
		for i := range mix.Classes {
			if csvValue(int64(mix.Classes[i].Class)) == r["size_class"] {
				c = &mix.Classes[i]
			}
		}
		if c == nil {
			t.Fatalf("%s class %s is not in the realized mix %+v", r["op"], r["size_class"], mix)
		}
		for col, want := range map[string]string{
			"size_class_keys": csvValue(c.Keys), "size_class_key_share": sig(c.KeyShare), "size_class_asked_key_share": sig(c.AskedKeyShare),
			"size_class_byte_share": sig(c.ByteShare), "size_class_asked_byte_share": sig(c.AskedByteShare),
		} {
			if r[col] != want {
				t.Errorf("%s %s: %s = %q, want %q", r["op"], r["size_class"], col, r[col], want)
			}
		}
	}
}

// sig is v as a float column prints it: to sigFigs significant digits.
func sig(v float64) string {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', sigFigs, 64), 64)
	return csvValue(f)
}
