package hostbench

import (
	"testing"

	"go.uber.org/goleak"
)

// HostsBencher runs each host's bench in a goroutine of its own: none may
// outlive the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
