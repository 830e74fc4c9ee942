package sweeps

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// A cell's hash decides whether a stored cell is kept on resume, so it must
// not move when the record's layout grows: every cell of the committed
// sample (planned by an earlier linerate) still hashes as it was stored.
func TestCellHashesOfTheSampleAreStable(t *testing.T) {
	dir := filepath.Join("..", "runs", "sample-local")
	b, err := os.ReadFile(filepath.Join(dir, PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Versions []PlanVersion `json:"versions"`
		Cells    []Cell        `json:"cells"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	run, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Cells) == 0 || len(run.Cells) != len(p.Cells) {
		t.Fatalf("%d planned cells, %d records", len(p.Cells), len(run.Cells))
	}
	for _, c := range p.Cells {
		if got := cellHash(p.Versions[c.Version], c.Workload, 1); got != c.Hash {
			t.Errorf("%s: hash %s, planned as %s", c.ID, got, c.Hash)
		}
		if r := run.Cells[c.ID]; r == nil || cellHash(p.Versions[c.Version], r.Workload, 1) != r.Hash {
			t.Errorf("%s: the stored record's workload no longer hashes to its hash", c.ID)
		}
	}
}
