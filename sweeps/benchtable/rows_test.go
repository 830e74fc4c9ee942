package benchtable

import (
	"encoding/json"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

// The table's own logic, without running anything: how a row is judged,
// what it prints, what its JSON holds.
func TestRowsJudgeAndRender(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		name      string
		r         row
		status    string
		a, b, rat string
		goal      string
	}{
		{"ratio met", compare("x", "Gbps", "Gbps", []float64{2, 3, 1}, []float64{1, 1, 2}, atLeastX(1)), statusMet, "2.00 Gbps", "1.00 Gbps", "2.00x", ">= 1.0x"},
		{"ratio missed", compare("x", "Gbps", "Gbps", []float64{1, 1, 1}, []float64{2, 2, 2}, atLeastX(1)), statusMissed, "1.00 Gbps", "2.00 Gbps", "0.50x", ">= 1.0x"},
		{"a failed round is left out", compare("x", "Gbps", "Gbps", []float64{nan, 4, 2}, []float64{1, 1, 1}, atLeastX(1)), statusMet, "3.00 Gbps", "1.00 Gbps", "3.00x", ">= 1.0x"},
		{"reference moved nothing", compare("x", "Gbps", "Gbps", []float64{5, 5, 5}, []float64{0, 0, 0}, atLeastX(1)), statusMet, "5.00 Gbps", "0.00 Gbps", "inf", ">= 1.0x"},
		{"reference's cost infinite", compare("x", "CPU-s/GB", "CPU-s/GB", []float64{0.2, 0.2, 0.2}, []float64{inf, inf, inf}, atMostX(0.5)), statusMet, "0.200 CPU-s/GB", "inf CPU-s/GB", "0.00x", "<= 0.5x"},
		{"no reference figure", compare("x", "Gbps", "Gbps", []float64{5, 5, 5}, []float64{nan, nan, nan}, atLeastX(1.5), "peer: no TLS", "", "peer: no TLS", "", "peer: no TLS"), statusNotMeasured, "5.00 Gbps", "-", "-", ">= 1.5x"},
		{"absolute", compare("x", "faults", "faults", []float64{0.02, 0.001, 0.003}, []float64{0, 0, 0}, atMost(0.01)), statusMet, "0.003 faults", "0.000 faults", "-", "<= 0.01 faults"},
		{"absolute without b", compare("x", "µs", "", []float64{12, -3, 40}, nil, atMost(0)), statusMissed, "12 µs", "-", "-", "<= 0 µs"},
		{"margin", compare("x", "%", "%", []float64{2.5, 2.5, 2.5}, []float64{0.7, 0.8, 0.9}, lateGoal), statusMet, "2.50 %", "0.80 %", "3.12x", "<= 2x + 1 %"},
		{"margin missed", compare("x", "%", "%", []float64{3, 3, 3}, []float64{0.5, 0.5, 0.5}, lateGoal), statusMissed, "3.00 %", "0.50 %", "6.00x", "<= 2x + 1 %"},
		// Both sides moved nothing (a 64 MiB TLS SET neither finished in
		// the window): the ratio says nothing, so the row is not MET.
		{"neither moved anything", compare("x", "Gbps", "Gbps", []float64{0, 0, 0}, []float64{0, 0, 0}, atLeastX(1.5)), statusNotMeasured, "0.00 Gbps", "0.00 Gbps", "-", ">= 1.5x"},
		{"two decimals", compare("x", "Gbps", "Gbps", []float64{1}, []float64{1}, atLeastX(0.95)), statusMet, "1.00 Gbps", "1.00 Gbps", "1.00x", ">= 0.95x"},
		{"not measured", notMeasured("x", "needs root"), statusNotMeasured, "-", "-", "-", "-"},
	} {
		r := tc.r
		if r.Status != tc.status || cell(r.A, r.UnitA) != tc.a || cell(r.B, r.UnitB) != tc.b || ratioCell(r) != tc.rat || r.Goal != tc.goal {
			t.Errorf("%s: %s, A %q, B %q, A/B %q, goal %q; want %s, %q, %q, %q, %q", tc.name, r.Status, cell(r.A, r.UnitA), cell(r.B, r.UnitB), ratioCell(r), r.Goal,
				tc.status, tc.a, tc.b, tc.rat, tc.goal)
		}
		if tc.name == "no reference figure" && r.Note != "peer: no TLS (3 of 3 rounds)" {
			t.Errorf("%s: note %q", tc.name, r.Note)
		}
		if (r.Met == nil) != (r.Status == statusNotMeasured) {
			t.Errorf("%s: met %v with status %s", tc.name, r.Met, r.Status)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}

	// One table, its rows in section order, and JSON without infinities.
	tb := &table{sections: map[string]string{}, progress: io.Discard}
	tb.where(secProbe, "probe setup")
	tb.add(secProbe, compare("probe row", "µs", "", []float64{-1}, nil, atMost(0)))
	tb.add(secPeer, compare("peer row", "CPU-s/GB", "CPU-s/GB", []float64{0.1}, []float64{inf}, atMostX(0.5), "peer completed no request"))
	var out strings.Builder
	facts := runFacts{host: "a host", start: time.Now(), loadStart: "1.0", loadEnd: "2.0", commit: "057e824"}
	tb.write(&out, facts)
	text := out.String()
	if p, q := strings.Index(text, "peer row"), strings.Index(text, "probe row"); p < 0 || q < p {
		t.Errorf("rows out of section order:\n%s", text)
	}
	if !strings.Contains(text, "2 MET, 0 MISSED, 0 not measured") || !strings.Contains(text, "probe: probe setup") {
		t.Errorf("table:\n%s", text)
	}
	rep := tb.report(facts)
	if rep.Commit != "057e824" {
		t.Errorf("report commit %q: want the one the run started on", rep.Commit)
	}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Rows []struct {
			Name string     `json:"name"`
			B    *float64   `json:"b"`
			RawB []*float64 `json:"raw_b"`
			Met  *bool      `json:"met"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != 2 || back.Rows[0].Name != "peer row" || back.Rows[0].B != nil || back.Rows[0].RawB[0] != nil || back.Rows[0].Met == nil || !*back.Rows[0].Met {
		t.Errorf("JSON %s", data)
	}
}

// A peer's progress output gives its figures; a peer that completed no
// request in the window gives none, and its rows are not measured (not
// MET against a zero), saying why.
func TestPeerRunReadsItsProgress(t *testing.T) {
	const size = 1 << 20
	out := "SET: rps=1032.0 (overall: 1627.9) avg_msec=1.919 (overall: 1.208) 2463 requests\r" +
		"SET: rps=1358.0 (overall: 1588.7) avg_msec=1.432 (overall: 1.236) 2812 requests\r"
	r := peerRun("valkey-benchmark", out, size, cpuTime{user: 0.812, sys: 2})
	gb := 2812 * size / 1e9
	if math.Abs(r.gbps-1588.7*size*8/1e9) > 1e-9 || math.Abs(r.cpuPerGB-2.812/gb) > 1e-9 || math.Abs(r.userPerGB-0.812/gb) > 1e-9 || r.note != "" {
		t.Errorf("run %+v from its progress", r)
	}
	none := peerRun("valkey-benchmark", "", size, cpuTime{user: 0.1, sys: 0.3})
	want := "valkey-benchmark completed no request in a " + benchWindow.String() + " window"
	if none.note != want {
		t.Errorf("note %q, want %q", none.note, want)
	}
	for _, row := range []row{
		compare("Gbps", "Gbps", "Gbps", []float64{1.4, 1.4, 1.4}, []float64{none.gbps, none.gbps, none.gbps}, atLeastX(1.5), none.note, none.note, none.note),
		compare("CPU", "CPU-s/GB", "CPU-s/GB", []float64{0.8, 0.8, 0.8}, []float64{none.cpuPerGB, none.cpuPerGB, none.cpuPerGB}, atMostX(0.5), none.note, none.note, none.note),
	} {
		if row.Status != statusNotMeasured || row.Met != nil || row.Note != want+" (3 of 3 rounds)" {
			t.Errorf("%s row against a peer that completed nothing: %s, note %q", row.Name, row.Status, row.Note)
		}
	}
}

// A cell's CPU row says each side's user-space share, the tool's own
// work; a side without figures gives no such note.
func TestPairRowsNoteTheUserSpaceShare(t *testing.T) {
	lr := []run{moved(25, 9, cpuTime{0.225, 2.7}), moved(30, 11, cpuTime{0.22, 2.7}), moved(27, 10, cpuTime{0.25, 2.9})}
	pr := []run{moved(25, 9, cpuTime{1.152, 2.3}), moved(26, 9, cpuTime{1.152, 2.1}), moved(26, 9, cpuTime{1.17, 2.2})}
	rows := pairRows("SET 1MiB", "valkey-benchmark", goalGbps, lr, pr)
	want := "user space 0.025 vs 0.128 CPU-s/GB (0.20x), the rest the kernel's"
	if len(rows) != 2 || rows[1].Note != want || rows[0].Note != "" {
		t.Errorf("rows %q / %q; want the CPU row to say %q", rows[0].Note, rows[1].Note, want)
	}
	none := []run{failed("peer: no TLS"), failed("peer: no TLS"), failed("peer: no TLS")}
	if rows := pairRows("SET 1MiB", "valkey-benchmark", goalGbps, lr, none); strings.Contains(rows[1].Note, "user space") {
		t.Errorf("a peer without figures still gave a user-space note: %q", rows[1].Note)
	}
}
