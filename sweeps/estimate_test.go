package sweeps

import (
	"context"
	"strings"
	"testing"
	"time"
)

// EstimateOf a part of a plan: its cells, and one server start per block
// they are in; of the whole plan, the plan's total.
func TestEstimateOf(t *testing.T) {
	c, err := ParseCampaign("t.yaml", []byte(`name: t
repetitions: 2
versions:
  - {store: valkey@9.1, label: v91}
  - {image: valkey/valkey:8.1.8}
workload:
  ratio: SET
  value-size: [1MiB, 8MiB]
  duration: 2s
  warmup: 1s
`))
	if err != nil {
		t.Fatal(err)
	}
	asTheTableSays(c)
	p, err := NewPlan(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.EstimateOf(nil); got != p.Estimate.Total {
		t.Errorf("EstimateOf(all) %v, want the total %v", got, p.Estimate.Total)
	}
	// 4 v91 cells (2 sizes x 2 rounds) in 2 blocks: 2s per start, and per
	// cell 2s overhead + 1s warmup + 2s.
	v91 := func(c Cell) bool { return strings.HasPrefix(c.ID, "v91/") }
	if got, want := p.EstimateOf(v91), 2*2*time.Second+4*5*time.Second; got != want {
		t.Errorf("EstimateOf(v91) %v, want %v", got, want)
	}
	if got := p.EstimateOf(func(Cell) bool { return false }); got != 0 {
		t.Errorf("EstimateOf(none) %v", got)
	}
}
