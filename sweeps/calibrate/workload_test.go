package calibrate

import (
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/sweeps"
)

// A calibration bench has a worker thread per connection, never more than
// a bench may have, two requests in flight on each, and copies its SET
// bodies, as iperf3 does: a campaign of 2,000 connections still
// calibrates.
func TestLinkWorkloadThreads(t *testing.T) {
	k := sweeps.Calibration{Duration: lab.Duration(2e9), ValueSize: 8 << 20}
	for _, tc := range []struct{ conns, threads int }{{1, 1}, {4, 4}, {2000, fields.MaxThreads}, {fields.MaxConnections, fields.MaxThreads}} {
		w := linkWorkload("198.18.0.1", 6379, k, lab.Ratio{Sets: 1}, tc.conns)
		if w.Threads != tc.threads || w.Connections != tc.conns || w.Pipeline != 2 || w.Send != lab.SendCopy {
			t.Errorf("%d connections: %d threads, %d connections, %d in flight, send %q; want %d threads, 2 in flight, copy", tc.conns, w.Threads, w.Connections, w.Pipeline, w.Send, tc.threads)
		}
		if err := fields.Validate(w); err != nil {
			t.Errorf("%d connections: %v", tc.conns, err)
		}
	}
}
