package agent

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/sshhost"
	"github.com/linerate/linerate/infra/sshhost/sshtest"
	"github.com/linerate/linerate/sweeps"
)

// A server on a remote host answers INFO through its agent there
// (sweeps.InfoSampler): the runner's memory and fork reads, stamped with
// the time the agent read them, moved onto the client host's clock.
func TestRemoteServerSamplesInfo(t *testing.T) {
	t.Parallel()
	bin := redisBinary(t)
	l := sshtest.New(t, "e2e-info")
	h, err := sshhost.New(sshConfig(t, l, l.Pair.Server, "server", filepath.Join(t.TempDir(), "known_hosts")))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	agent := &AgentClient{Host: h}
	defer agent.Close(context.Background())
	const shift = time.Hour // the server host's clock an hour ahead
	st := &RemoteStarter{Agent: agent, Shift: shift}
	ctx := context.Background()
	srv, err := st.Start(ctx, sweeps.PlanVersion{Spec: sweeps.VersionSpec{Binary: bin, Label: "info"}, Segment: "info"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(ctx)
	is, ok := srv.(sweeps.InfoSampler)
	if !ok {
		t.Fatalf("a remote server (%T) does not read INFO for the runner", srv)
	}
	before := time.Now()
	s, err := is.SampleInfo(ctx, "memory", "persistence", "stats")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"used_memory", "rdb_bgsave_in_progress", "aof_rewrite_in_progress", "latest_fork_usec", "total_forks"} {
		if s.Fields[k] == "" {
			t.Errorf("INFO through the agent lacks %s: %v", k, s.Fields)
		}
	}
	// The agent stamps with the server host's clock, which here is this
	// one; Shift says it is an hour ahead, so the stamp moves back.
	if at := s.At.Add(shift); at.Before(before.Add(-time.Second)) || at.After(time.Now().Add(time.Second)) {
		t.Errorf("sample at %s, want within the call (%s) an hour back", s.At, before)
	}
	if _, err := is.SampleInfo(ctx, "memory; FLUSHALL"); err == nil {
		t.Error("the agent read an INFO section that is no section name")
	}
	// MEMORY USAGE and BGSAVE go through the agent too: an empty server
	// has no key to sample, and a BGSAVE forks once (the fork is made
	// before BGSAVE answers).
	if k, err := srv.(sweeps.KeySampler).KeyMemory(ctx, 16); err != nil || k.Keys != 0 {
		t.Errorf("MEMORY USAGE of an empty server through the agent: %+v, %v", k, err)
	}
	if err := srv.(sweeps.Snapshotter).BGSave(ctx); err != nil {
		t.Fatalf("BGSAVE through the agent: %v", err)
	}
	after, err := is.SampleInfo(ctx, "stats")
	if err != nil {
		t.Fatal(err)
	}
	if b, a := s.Fields["total_forks"], after.Fields["total_forks"]; a == b {
		t.Errorf("total_forks %s before BGSAVE and %s after: no fork", b, a)
	}
}
