package sweeps

import "github.com/linerate/linerate/lab"

// TLSServer is a RunningServer that serves TLS only (server.tls): the
// bench speaks TLS to it, trusting the CA the launcher made for the run.
type TLSServer interface {
	// BenchTLS is the bench's TLS settings for this server: the CA file
	// on the host that started it and the name its certificate holds.
	// The zero value when the server serves plain TCP.
	BenchTLS() lab.TLS
}

// benchTLS is the TLS a cell's bench uses against srv: the server's own
// when it serves TLS, else what the workload says.
func benchTLS(srv RunningServer, given lab.TLS) lab.TLS {
	if t, ok := srv.(TLSServer); ok {
		if s := t.BenchTLS(); s.On {
			return s
		}
	}
	return given
}
