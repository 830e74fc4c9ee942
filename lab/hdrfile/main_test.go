package hdrfile_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The round trip runs the engine, which starts goroutines: none may
// outlive the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
