package sweeps

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/lab/labtest"
)

// Each list is fine alone; their product (9e7 cells) must be refused
// before it is allocated, not after.
func TestCrossProductRefusedBeforeAllocation(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: t\nversions:\n  - store: valkey@9.1\nworkload:\n  ratio: SET\n  key-size: 64\n")
	for _, l := range []struct {
		name  string
		from  int
		count int
	}{{"keyspace", 1, 300}, {"connections", 1000, 300}, {"pipeline", 1, 1000}} {
		vals := make([]string, l.count)
		for i := range vals {
			vals[i] = fmt.Sprint(l.from + i)
		}
		fmt.Fprintf(&b, "  %s: [%s]\n", l.name, strings.Join(vals, ", "))
	}
	labtest.Within(t, 5*time.Second, func() {
		_, err := ParseCampaign("t.yaml", []byte(b.String()))
		if err == nil || !strings.Contains(err.Error(), "t.yaml:5:3: workload: the workload block expands to more than 100000 cells") {
			t.Errorf("got %v", err)
		}
	})
}

// A campaign is a regular file of at most MaxCampaignBytes: /dev/zero
// would never end, a FIFO would block the open.
func TestLoadCampaignRefusesEndlessFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(goodSpec+"#"+strings.Repeat("x", MaxCampaignBytes)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/zero": "/dev/zero: not a regular file",
		fifo:        fifo + ": not a regular file",
		big:         big + ": larger than 1024 KiB",
	} {
		labtest.Within(t, 5*time.Second, func() {
			if _, err := LoadCampaign(path); err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("LoadCampaign(%s) = %v, want %q", path, err, want)
			}
		})
	}
}

// Estimates saturate instead of wrapping: a prefill of 2^30 keys of 4 GiB
// at 1 MB/s is 146 years per cell, past what time.Duration holds once
// summed, and must read as huge, never negative.
func TestEstimateSaturates(t *testing.T) {
	e := EstimateParams{PrefillRate: MinPrefillRate}
	w := lab.Workload{Prefill: true, Keyspace: fields.MaxKeyspace, ValueSz: lab.OneSize(lab.MaxValueSize), Duration: lab.Duration(lab.MaxDuration)}
	if one := e.cell(w); one < 100*365*24*time.Hour {
		t.Errorf("one cell: %s, want more than a century", one)
	}
	if got := addSat(math.MaxInt64-1, 5*time.Second); got != math.MaxInt64 {
		t.Errorf("addSat wrapped to %s", got)
	}
	if addSat(2*time.Second, 3*time.Second) != 5*time.Second {
		t.Errorf("addSat does not add")
	}
}
