package exitcode_test

import (
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/exitcode"
)

// Each stop reason a record can state has its documented exit code; one
// it does not know is a failure, never a success.
func TestForEachStopReason(t *testing.T) {
	cases := []struct {
		reason lab.StopReason
		want   int
	}{
		{lab.StopCompleted, 0},
		{lab.StopErrors, 1},
		{lab.StopSetupFailed, 3},
		{lab.StopServerLost, 4},
		{lab.StopInterrupted, 130},
		{lab.StopReason("from-a-newer-linerate"), 1},
	}
	for _, tc := range cases {
		if got := exitcode.For(tc.reason); got != tc.want {
			t.Errorf("For(%q) = %d, want %d", tc.reason, got, tc.want)
		}
	}
}
