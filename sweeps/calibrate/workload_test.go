package calibrate

import (
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/sweeps"
)

// A calibration bench has a worker thread per connection, never more than
// a bench may have, and two requests in flight on each: a campaign of
// 2,000 connections still calibrates.
func TestLinkWorkloadThreads(t *testing.T) {
	k := sweeps.Calibration{Duration: lab.Duration(2e9), ValueSize: 8 << 20}
	for _, tc := range []struct{ conns, threads int }{{1, 1}, {4, 4}, {2000, fields.MaxThreads}, {fields.MaxConnections, fields.MaxThreads}} {
		w := linkWorkload("198.18.0.1", 6379, k, lab.Ratio{Gets: 1}, tc.conns)
		if w.Threads != tc.threads || w.Connections != tc.conns || w.Pipeline != 2 {
			t.Errorf("%d connections: %d threads, %d connections, %d in flight; want %d threads, 2 in flight", tc.conns, w.Threads, w.Connections, w.Pipeline, tc.threads)
		}
		if err := fields.Validate(w); err != nil {
			t.Errorf("%d connections: %v", tc.conns, err)
		}
	}
}
