package aws

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// TestTimingEnv names a test-only setting: the provider's waits and lease
// as "poll=5ms,lease=3s,renew=200ms,ssh=300ms,running=2s,delete=2s,
// notfound=1s,backoff=5ms", so tests of the real binary against the local
// fake (awsfake) run in seconds. It is honoured only when the endpoint is
// a loopback address, which AWS never is; set with any other endpoint, or
// none, it is refused, so a variable left in a shell cannot shorten a real
// pair's lease.
const TestTimingEnv = "LINERATE_AWSFAKE_TIMING"

// applyTestTiming applies TestTimingEnv to c.
func applyTestTiming(c *Config) error {
	v := os.Getenv(TestTimingEnv)
	if v == "" {
		return nil
	}
	if !loopbackEndpoint(c.Endpoint) {
		return fmt.Errorf("%s is set (test timings for the local fake), but the endpoint %q is not a loopback address: unset it", TestTimingEnv, c.Endpoint)
	}
	fields := map[string]*time.Duration{
		"poll": &c.Poll, "lease": &c.Lease, "renew": &c.Renew, "ssh": &c.SSHTimeout, "running": &c.RunningTimeout,
		"delete": &c.DeleteTimeout, "notfound": &c.NotFoundTimeout, "backoff": &c.MaxBackoff,
	}
	for _, kv := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(kv), "=")
		d, err := time.ParseDuration(val)
		f, ok := fields[k]
		if !ok || err != nil || d <= 0 {
			return fmt.Errorf("%s: %q: want name=duration with a name of poll, lease, renew, ssh, running, delete, notfound, backoff", TestTimingEnv, kv)
		}
		*f = d
	}
	return nil
}

// loopbackEndpoint reports whether an endpoint URL names a loopback IP.
func loopbackEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}
