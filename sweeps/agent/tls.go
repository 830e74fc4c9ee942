package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/atomicfile"
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

// keepCA writes a remote server's CA where the bench reads it
// (hostbench.HostBencher copies it on to a client host): in the run's log
// directory, tls/SEGMENT.ca.crt, the last start's (a server started on
// this machine keeps its CA under its own log directory). It is the
// run's and stays with it; the system's temp directory would keep it for
// good after a kill -9 of this process.
func keepCA(logDir, segment string, t *agentTLS) (string, error) {
	if logDir == "" {
		return "", errors.New("keep the server's CA: no run log directory to keep it in")
	}
	path := filepath.Join(logDir, "tls", segment+".ca.crt")
	err := os.MkdirAll(filepath.Dir(path), 0o700)
	if err == nil {
		err = atomicfile.Write(path, []byte(t.CA))
	}
	if err != nil {
		return "", fmt.Errorf("keep the server's CA: %w", err)
	}
	return path, nil
}

// BenchTLS implements sweeps.TLSServer: the server's CA, kept on this
// machine, and the name its certificate holds (its data address).
func (r *remoteServer) BenchTLS() lab.TLS {
	if r.caFile == "" {
		return lab.TLS{}
	}
	return lab.TLS{On: true, CACert: r.caFile, SNI: r.st.TLS.ServerName}
}
