// Package serverstest gives tests a server build from the project's store
// (infra/servers), installed into the user's store when missing: the same
// valkey the campaigns run, not whatever the system has.
package serverstest

import (
	"context"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/servers"
)

// Valkey is valkey 9.1 from the store (sid's build and libraries), as the
// TLS and peer benchmarks use it. A failed install fails the test: the
// store is how the project gets its servers, so a skip would hide it.
func Valkey(t testing.TB) *servers.Installed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	inst, err := InstallValkey(ctx)
	if err != nil {
		t.Fatalf("valkey 9.1 from the store: %v", err)
	}
	return inst
}

// InstallValkey is Valkey for a caller that decides itself what a failed
// install means (the benchmarks fall back to the system's redis outside CI).
func InstallValkey(ctx context.Context) (*servers.Installed, error) {
	st, err := servers.Open("")
	if err != nil {
		return nil, err
	}
	sel, err := servers.ParseSelector("valkey@9.1")
	if err != nil {
		return nil, err
	}
	return st.Install(ctx, sel, servers.InstallOptions{Runtime: "sid"})
}
