package sweeps

import (
	"context"
	"os"
	"testing"
	"time"
)

// The shipped campaigns load, plan, and keep their promises: local stays
// under eight minutes on this machine's estimate.
func TestShippedCampaigns(t *testing.T) {
	for _, tc := range []struct {
		file  string
		cells int
		max   time.Duration
	}{
		{"campaigns/local.yaml", 5 * 2 * 4, 8 * time.Minute},
		{"campaigns/study.yaml", 5 * 2 * 8, 4 * time.Hour},
	} {
		c, err := LoadCampaign(tc.file)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		p, err := NewPlan(context.Background(), c, nil)
		if err != nil {
			t.Fatalf("%s: plan: %v", tc.file, err)
		}
		if len(p.Cells) != tc.cells {
			t.Errorf("%s: %d cells, want %d", tc.file, len(p.Cells), tc.cells)
		}
		if p.Estimate.Total > tc.max {
			t.Errorf("%s: estimate %s over %s", tc.file, p.Estimate.Total, tc.max)
		}
		if testing.Verbose() {
			_ = WritePlan(os.Stdout, p)
		}
	}
}
