// Package mirrortest lets tests that download from Debian's mirror decide
// whether they can run: on CI (CI=true) an unreachable mirror fails the
// test; elsewhere the test is skipped, saying why.
package mirrortest

import (
	"net"
	"os"
	"testing"
	"time"
)

// Require fails (CI) or skips (elsewhere) t when the mirror is unreachable.
func Require(t testing.TB) {
	t.Helper()
	c, err := net.DialTimeout("tcp", "deb.debian.org:80", 5*time.Second)
	if err == nil {
		c.Close()
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("Debian mirror unreachable (%v); CI needs it to install server versions", err)
	}
	t.Skipf("Debian mirror unreachable (%v); this test downloads packages (it fails instead when CI=true)", err)
}
