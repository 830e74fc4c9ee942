package agent

import (
	"fmt"
	"os"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
)

// agentTLS is what a client needs to trust a TLS-only server an agent
// started (server.tls): the run's CA certificate, PEM (its file is on the
// agent's host), and the name the server certificate holds.
type agentTLS struct {
	CA         string `json:"ca"`
	ServerName string `json:"server_name"`
}

// startedTLS is srv's agentTLS; nil when it serves plain TCP.
func startedTLS(srv sweeps.RunningServer) (*agentTLS, error) {
	ts, ok := srv.(sweeps.TLSServer)
	if !ok {
		return nil, nil
	}
	t := ts.BenchTLS()
	if !t.On {
		return nil, nil
	}
	pem, err := os.ReadFile(t.CACert)
	if err != nil {
		return nil, fmt.Errorf("the run's CA certificate: %w", err)
	}
	return &agentTLS{CA: string(pem), ServerName: t.SNI}, nil
}

// keepCA writes a remote server's CA to a file on this machine, where the
// bench reads it (local.HostBencher copies it on to a client host).
func keepCA(t *agentTLS) (string, error) {
	f, err := os.CreateTemp("", "linerate-ca-*.crt")
	if err != nil {
		return "", fmt.Errorf("keep the server's CA: %w", err)
	}
	_, err = f.WriteString(t.CA)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("keep the server's CA: %w", err)
	}
	return f.Name(), nil
}

// BenchTLS implements sweeps.TLSServer: the server's CA, kept on this
// machine, and the name its certificate holds (its data address).
func (r *remoteServer) BenchTLS() lab.TLS {
	if r.caFile == "" {
		return lab.TLS{}
	}
	return lab.TLS{On: true, CACert: r.caFile, SNI: r.st.TLS.ServerName}
}
