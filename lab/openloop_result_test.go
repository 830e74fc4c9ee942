package lab_test

import (
	"testing"

	"github.com/linerate/linerate/lab"
)

// A p99 from n samples is known to within the order statistics around its
// rank: narrow for many samples, wide for few, nothing for none.
func TestP99Interval(t *testing.T) {
	h := lab.NewHistogram()
	if lo, hi := lab.P99Interval(h); lo != 0 || hi != 0 {
		t.Errorf("empty: [%v, %v]", lo, hi)
	}
	for v := int64(1); v <= 1000; v++ {
		_ = h.RecordValue(v)
	}
	// Ranks 990 -/+ 1.96 sqrt(9.9) = 983.8 and 996.2.
	if lo, hi := lab.P99Interval(h); lo != 983 || hi != 997 {
		t.Errorf("1..1000: [%v, %v], want [983, 997]", lo, hi)
	}
	few := lab.NewHistogram()
	for v := int64(1); v <= 50; v++ {
		_ = few.RecordValue(v * 100)
	}
	// 50 samples: the interval reaches the largest one (HDR keeps 3
	// significant figures).
	if lo, hi := lab.P99Interval(few); hi < 5000 || hi > 5005 || lo > 4900 || lo < 4700 {
		t.Errorf("50 samples: [%v, %v]", lo, hi)
	}
}
