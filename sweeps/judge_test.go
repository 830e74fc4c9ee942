package sweeps

import (
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

// judge names why a finished bench is no cell: a window that every
// request outlived, or GETs that all found no key (a keyspace never
// written is no reading of the server's speed, and no timing to lengthen).
func TestJudgeSaysWhyACellHasNoFigure(t *testing.T) {
	window := lab.Window{Requested: lab.Duration(3 * time.Second)}
	for _, tc := range []struct {
		name string
		ops  map[lab.Op]*lab.OpResult
		want string
	}{
		{"completed", map[lab.Op]*lab.OpResult{lab.OpGet: {Ops: 300}}, ""},
		{"outlived", map[lab.Op]*lab.OpResult{lab.OpGet: {}}, "no request completed inside the 3s window; lengthen duration or lower connections"},
		{"all missed", map[lab.Op]*lab.OpResult{lab.OpGet: {Misses: 300}}, "all 300 GETs found no key: nothing wrote the keyspace; prefill it (workload.prefill: true)"},
		{"some missed", map[lab.Op]*lab.OpResult{lab.OpGet: {Ops: 10, Misses: 290}}, ""},
	} {
		res := &lab.Result{Window: window, Ops: tc.ops, Stop: lab.Stop{Reason: lab.StopCompleted}}
		if got := judge(res); got != tc.want {
			t.Errorf("%s: judge says %q, want %q", tc.name, got, tc.want)
		}
	}
}
