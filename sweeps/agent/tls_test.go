package agent

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/sweeps"
)

// namedHost answers for its name and address only: anything else it is
// asked (starting an agent) panics.
type namedHost struct{ infra.Host }

func (namedHost) Name() string         { return "server" }
func (namedHost) DataAddr() netip.Addr { return netip.MustParseAddr("198.18.0.1") }

// A TLS-only server's CA is kept in the run; with no run directory to
// keep it in, the start is refused before anything starts on the host.
func TestTLSStartWithoutRunDirIsRefusedFirst(t *testing.T) {
	st := &RemoteStarter{Agent: &AgentClient{Host: namedHost{}}}
	pv := sweeps.PlanVersion{Spec: sweeps.VersionSpec{Server: sweeps.ServerSettings{TLS: true}}, Segment: "valkey-9.1.2"}
	_, err := st.Start(context.Background(), pv, "")
	if err == nil || !strings.Contains(err.Error(), "log directory") {
		t.Fatalf("start without a run directory: %v, want a refusal naming the log directory", err)
	}
}

// keepCA writes the CA where the run keeps it, whole.
func TestKeepCAInTheRun(t *testing.T) {
	dir := t.TempDir()
	path, err := keepCA(dir, "valkey-9.1.2", &agentTLS{CA: "-----BEGIN CERTIFICATE-----\nx\n"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "tls", "valkey-9.1.2.ca.crt"); path != want {
		t.Errorf("kept at %s, want %s", path, want)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "-----BEGIN CERTIFICATE-----\nx\n" {
		t.Errorf("kept %q, %v", b, err)
	}
}
