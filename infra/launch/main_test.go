package launch

import (
	"testing"

	"go.uber.org/goleak"
)

// Every start leaves no goroutine behind once its server is stopped or
// reported dead.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
