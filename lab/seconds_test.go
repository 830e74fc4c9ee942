package lab_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

// Since v2 every duration of a record is also a number of seconds beside
// its string, for tools that cannot parse "1m0s".
func TestRecordCarriesSecondsBesideDurations(t *testing.T) {
	r := lab.Result{
		Schema: lab.SchemaVersion,
		Workload: lab.Workload{Warmup: lab.Duration(1500 * time.Millisecond), Duration: lab.Duration(4 * time.Second),
			RequestTimeout: lab.Duration(time.Minute)},
		Window: lab.Window{Warmup: lab.Duration(1500 * time.Millisecond), Requested: lab.Duration(4 * time.Second),
			Measured: lab.Duration(3999500 * time.Microsecond)},
	}
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Workload map[string]any `json:"workload"`
		Window   map[string]any `json:"window"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		part     map[string]any
		field    string
		str      string
		wantSecs float64
	}{
		{m.Workload, "warmup", "1.5s", 1.5},
		{m.Workload, "duration", "4s", 4},
		{m.Workload, "request_timeout", "1m0s", 60},
		{m.Window, "warmup", "1.5s", 1.5},
		{m.Window, "requested", "4s", 4},
		{m.Window, "measured", "3.9995s", 3.9995},
	} {
		if tc.part[tc.field] != tc.str || tc.part[tc.field+"_s"] != tc.wantSecs {
			t.Errorf("%s = %v, %s_s = %v; want %q and %g", tc.field, tc.part[tc.field], tc.field, tc.part[tc.field+"_s"], tc.str, tc.wantSecs)
		}
	}
	// Read back, the record is the same: the seconds are derived, not read.
	var back lab.Result
	if err := json.Unmarshal(b, &back); err != nil || back.Window != r.Window || back.Workload.RequestTimeout != r.Workload.RequestTimeout {
		t.Errorf("read back: %+v %v", back.Window, err)
	}
}

// A v1 record (no seconds) still reads, and says what it is.
func TestV1RecordsStillRead(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "runs", "sample-local", "cells", "valkey-9.1.2_GET_16MiB_r1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cell struct {
		Result lab.Result `json:"result"`
	}
	if err := json.Unmarshal(b, &cell); err != nil {
		t.Fatal(err)
	}
	r := cell.Result
	if r.Schema != lab.SchemaV1 || !lab.ReadsSchema(r.Schema) || !lab.ReadsSchema(lab.SchemaVersion) || lab.ReadsSchema("linerate.bench/v3") {
		t.Errorf("schema %q: reads v1 %v, v2 %v, v3 %v", r.Schema, lab.ReadsSchema(lab.SchemaV1), lab.ReadsSchema(lab.SchemaVersion), lab.ReadsSchema("linerate.bench/v3"))
	}
	if r.Window.Measured.D() != 4*time.Second || r.Workload.RequestTimeout.D() != time.Minute || r.Ops[lab.OpGet].Ops == 0 {
		t.Errorf("v1 record read as window %+v, timeout %s", r.Window, r.Workload.RequestTimeout)
	}
}
