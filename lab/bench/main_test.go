package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// A bench runs the engine, which starts goroutines: none may outlive the
// tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
