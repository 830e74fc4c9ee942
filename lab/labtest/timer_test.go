package labtest

import (
	"testing"
	"time"
)

// The probe sleeps to every deadline, counts a wake late only past its
// bound, and every wake when the bound is below zero.
func TestTimerLateCountsAgainstItsBound(t *testing.T) {
	start := time.Now()
	late, err := TimerLate(50, 2*time.Millisecond, time.Hour)
	if err != nil || late != 0 {
		t.Errorf("bound of an hour: %d late, %v", late, err)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("50 deadlines 2 ms apart passed in %s: the probe did not wait for them", took)
	}
	if late, err := TimerLate(20, time.Millisecond, -time.Nanosecond); err != nil || late != 20 {
		t.Errorf("bound below zero: %d of 20 late, %v", late, err)
	}
}
