package sweeps

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/hdrfile"
)

// hdrResult is a record with a window histogram and two seconds of
// per-second histograms for each op it is given.
func hdrResult(t *testing.T, ops ...lab.Op) *lab.Result {
	t.Helper()
	enc := func(vals ...int64) string {
		h := hdr.New(1, 3600*1000*1000, 3)
		for _, v := range vals {
			h.RecordValue(v)
		}
		b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	r := &lab.Result{RunID: "r1", Ops: map[lab.Op]*lab.OpResult{},
		Window: lab.Window{Measured: lab.Duration(2 * time.Second), Start: &start}}
	for _, op := range ops {
		r.Ops[op] = &lab.OpResult{Ops: 4,
			Latency: lab.LatencySummary{Count: 4, Histogram: enc(100, 200, 300, 4000)},
			Series:  []lab.SecondSample{{Second: 0, Ops: 2, Histogram: enc(100, 200)}, {Second: 1, Ops: 2, Histogram: enc(300, 4000)}}}
	}
	return r
}

func listDir(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// A cell's and a soak's HdrHistogram files sit in hgrm/ under the record's
// name; a redo that failed leaves none of the old ones behind.
func TestStoreWritesHDRFiles(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := &CellRecord{CellID: "valkey-9.1.2/GET/1MiB/r1", Status: StatusDone, Result: hdrResult(t, lab.OpGet, lab.OpSet)}
	if err := st.WriteCell(rec); err != nil {
		t.Fatal(err)
	}
	hg := filepath.Join(dir, HgrmDir)
	want := "valkey-9.1.2_GET_1MiB_r1.GET.hgrm valkey-9.1.2_GET_1MiB_r1.GET.hlog valkey-9.1.2_GET_1MiB_r1.SET.hgrm valkey-9.1.2_GET_1MiB_r1.SET.hlog"
	if got := listDir(t, hg); got != want {
		t.Fatalf("hgrm/ holds %s\nwant %s", got, want)
	}
	files, err := hdrfile.Files(rec.Result)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(hg, "valkey-9.1.2_GET_1MiB_r1."+f.Name))
		if err != nil || !bytes.Equal(b, f.Data) {
			t.Errorf("%s differs from hdrfile.Files (%v)", f.Name, err)
		}
	}

	// Redone: now only GET measured, then a failure with no record at all.
	rec.Result = hdrResult(t, lab.OpGet)
	if err := st.WriteCell(rec); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, hg); got != "valkey-9.1.2_GET_1MiB_r1.GET.hgrm valkey-9.1.2_GET_1MiB_r1.GET.hlog" {
		t.Errorf("after a GET-only redo hgrm/ holds %s", got)
	}
	rec.Status, rec.Result = StatusFailed, nil
	if err := st.WriteCell(rec); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, hg); got != "" {
		t.Errorf("after a failed redo hgrm/ holds %s", got)
	}

	soak := &SoakRecord{CellID: rec.CellID, Result: hdrResult(t, lab.OpSet)}
	if err := st.WriteSoak("valkey-9.1.2_GET_1MiB_r1-20261202T120000Z", soak); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, hg); got != "soak_valkey-9.1.2_GET_1MiB_r1-20261202T120000Z.SET.hgrm soak_valkey-9.1.2_GET_1MiB_r1-20261202T120000Z.SET.hlog" {
		t.Errorf("after a soak hgrm/ holds %s", got)
	}
	// ReadRun is not disturbed by the directory.
	if run, err := ReadRun(dir); err != nil || len(run.Problems) != 0 || len(run.Cells) != 1 {
		t.Errorf("ReadRun: %v %v", err, run)
	}
}
