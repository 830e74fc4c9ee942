package rawsock

import (
	"testing"

	"go.uber.org/goleak"
)

// No goroutine that a test, or the code it runs, starts may outlive the
// tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
