package agent

// The coordinator's side of what an agent does on its host: start
// servers there, sample it, tune it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"
	"time"

	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
	"github.com/linerate/linerate/tuning"
)

// RemoteStarter starts campaign versions on a remote server host through
// its agent (sweeps.ServerStarter and sweeps.Resolver): store selectors
// resolve in that host's store, binaries are paths there, images run with
// its docker. Servers listen on the host's data address.
type RemoteStarter struct {
	Agent *AgentClient
	// LogDir is where server logs go on the host; default
	// .cache/linerate/servers under the login directory.
	LogDir string
	// Shift is the server host's clock minus the client host's: snapshots
	// are moved by it onto the client's clock, which stamps the results
	// whose window they are cut to.
	Shift time.Duration
}

// Resolve implements sweeps.Resolver on the server host.
func (s *RemoteStarter) Resolve(ctx context.Context, v sweeps.VersionSpec) (sweeps.Resolved, error) {
	r, _, err := s.Agent.call(ctx, resolveRequest{Version: &v}, nil)
	if err != nil {
		return sweeps.Resolved{}, err
	}
	if r.Resolved == nil {
		return sweeps.Resolved{}, fmt.Errorf("resolve %s on %s: empty answer", v.Selector(), s.Agent.Host.Name())
	}
	return *r.Resolved, nil
}

// Start implements sweeps.ServerStarter. Logs stay on the host, and a
// crash's log tail comes back in the exit message; logDir (the local
// run's) keeps a TLS-only server's CA (keepCA).
func (s *RemoteStarter) Start(ctx context.Context, pv sweeps.PlanVersion, logDir string) (sweeps.RunningServer, error) {
	dir := s.LogDir
	if dir == "" {
		dir = ".cache/linerate/servers"
	}
	addr := s.Agent.Host.DataAddr()
	a := s.Agent
	if pv.Spec.Server.TLS && logDir == "" {
		// Refused before a server starts only to be stopped (keepCA).
		return nil, fmt.Errorf("start %s on %s: a TLS-only server's CA is kept in the run's log directory, and none was given", pv.Segment, a.Host.Name())
	}
	if !addr.IsValid() {
		// Bound to loopback, the client host could not reach it.
		return nil, fmt.Errorf("start %s on %s: the host has no data address (an ssh host named by host name needs data-address in the provider block)", pv.Segment, a.Host.Name())
	}
	r, sess, err := a.call(ctx, startRequest{Plan: &pv, Bind: addr.String(), LogDir: dir}, nil)
	if err != nil {
		return nil, err
	}
	st := r.Started
	if st == nil {
		return nil, fmt.Errorf("start %s on %s: empty answer", pv.Segment, a.Host.Name())
	}
	srv := &remoteServer{agent: a, sess: sess, st: *st, shift: s.Shift}
	// Containers report 127.0.0.1 (host network); the client host reaches
	// the server at the data address.
	srv.st.Host = addr.String()
	sess.mu.Lock()
	e := sess.exits[st.ID]
	sess.mu.Unlock()
	if e == nil {
		return nil, fmt.Errorf("start %s on %s: answer without registration", pv.Segment, a.Host.Name())
	}
	srv.exited = e.ch
	if st.TLS != nil {
		if srv.caFile, err = keepCA(logDir, pv.Segment, st.TLS); err != nil {
			_ = srv.Stop(ctx)
			return nil, err
		}
	}
	return srv, nil
}

// remoteServer is a server an agent started (sweeps.RunningServer and
// sweeps.HostSampler). It lives in its agent's session: requests go to
// that session only, never to a fresh agent that does not know it.
type remoteServer struct {
	agent  *AgentClient
	sess   *session
	st     agentServer
	shift  time.Duration
	exited <-chan error
	caFile string // a TLS-only server's CA, kept in the local run (keepCA)
}

func (r *remoteServer) Addr() (string, int)                             { return r.st.Host, r.st.Port }
func (r *remoteServer) PID() int                                        { return 0 } // not on this host
func (r *remoteServer) Identity() sweeps.Resolved                       { return r.st.Identity }
func (r *remoteServer) Info(context.Context) (map[string]string, error) { return r.st.Info, nil }
func (r *remoteServer) Exited() <-chan error                            { return r.exited }

func (r *remoteServer) FlushAll(ctx context.Context) error {
	_, _, err := r.agent.call(ctx, flushRequest{serverRef{r.st.ID}}, r.sess)
	return err
}

func (r *remoteServer) Stop(ctx context.Context) error {
	r.sess.mu.Lock()
	e := r.sess.exits[r.st.ID]
	delete(r.sess.exits, r.st.ID)
	running := e != nil && e.end(nil) // an asked-for end is no event
	r.sess.mu.Unlock()
	if !running {
		// It ended already, or its agent did and stopped it then.
		return nil
	}
	_, _, err := r.agent.call(ctx, stopRequest{serverRef{r.st.ID}}, r.sess)
	if errors.Is(err, errSessionGone) {
		return nil // its agent stopped it when its input ended
	}
	return err
}

// SnapshotHost implements sweeps.HostSampler: the server host's /proc
// through the agent, on the client host's clock.
func (r *remoteServer) SnapshotHost(ctx context.Context) (*hostmetrics.Snapshot, error) {
	rep, _, err := r.agent.call(ctx, snapshotRequest{serverRef{r.st.ID}}, r.sess)
	if err != nil {
		return nil, err
	}
	if rep.Snapshot != nil {
		rep.Snapshot.At = rep.Snapshot.At.Add(-r.shift)
	}
	return rep.Snapshot, nil
}

// SampleInfo implements sweeps.InfoSampler: the agent reads the sections
// on its host and stamps them with its clock, moved onto the client
// host's here.
func (r *remoteServer) SampleInfo(ctx context.Context, sections ...string) (sweeps.InfoSample, error) {
	rep, _, err := r.agent.call(ctx, infoRequest{serverRef: serverRef{r.st.ID}, Sections: sections}, r.sess)
	if err != nil {
		return sweeps.InfoSample{}, err
	}
	return sweeps.InfoSample{At: rep.Now.Add(-r.shift), Fields: rep.Info}, nil
}

// KeyMemory implements sweeps.KeySampler: MEMORY USAGE of a sample of
// the keys, read by the agent on the server's host.
func (r *remoteServer) KeyMemory(ctx context.Context, n int) (sweeps.KeyMemory, error) {
	rep, _, err := r.agent.call(ctx, keyMemoryRequest{serverRef: serverRef{r.st.ID}, Keys: n}, r.sess)
	if err != nil {
		return sweeps.KeyMemory{}, err
	}
	if rep.KeyMemory == nil {
		return sweeps.KeyMemory{}, fmt.Errorf("key-memory: the agent answered without figures")
	}
	return *rep.KeyMemory, nil
}

// BGSave implements sweeps.Snapshotter through the agent.
func (r *remoteServer) BGSave(ctx context.Context) error {
	_, _, err := r.agent.call(ctx, bgsaveRequest{serverRef{r.st.ID}}, r.sess)
	return err
}

// RemoteTuner applies a tuning profile to both hosts of a pair through
// their agents, checks both before each cell (sweeps.TuningCheck) and
// reverts both. A host whose agent was replaced (its connection dropped:
// the old agent reverted when its input ended) is tuned again before its
// check, and the check counts that as a drift.
type RemoteTuner struct {
	Agents  map[string]*AgentClient // by role: server, client, client-2 …
	Profile []byte                  // the profile file's text

	applied map[string]*session // the session each host was tuned in
}

func (t *RemoteTuner) roles() []string { return Roles(t.Agents) }

// Roles lists the roles of agents by host: server, client, then further
// client hosts (client-2 …) in order.
func Roles(agents map[string]*AgentClient) []string {
	var out []string
	for _, r := range []string{"server", "client"} {
		if agents[r] != nil {
			out = append(out, r)
		}
	}
	var more []string
	for r := range agents {
		if r != "server" && r != "client" {
			more = append(more, r)
		}
	}
	sort.Slice(more, func(i, j int) bool {
		if len(more[i]) != len(more[j]) {
			return len(more[i]) < len(more[j]) // client-2 before client-10
		}
		return more[i] < more[j]
	})
	return append(out, more...)
}

func (t *RemoteTuner) apply(ctx context.Context, role string) (json.RawMessage, error) {
	a := t.Agents[role]
	r, sess, err := a.call(ctx, tuneApplyRequest{Profile: string(t.Profile), DataAddr: addrString(a.Host.DataAddr()), Scope: string(a.TuneScope), KernelNetns: a.KernelNetns}, nil)
	if err != nil {
		if a.notRoot() {
			err = fmt.Errorf("%w (tuning writes /proc/sys and /proc/irq: log in as root, or give the user passwordless sudo)", err)
		}
		return nil, err
	}
	if t.applied == nil {
		t.applied = map[string]*session{}
	}
	t.applied[role] = sess
	return r.Tuning, nil
}

// Apply tunes every host and writes {"server": snapshot, "client":
// snapshot} to stateDir/SnapshotFile for the record ("": nowhere); each
// agent keeps its own on its host, and reverts one an earlier agent left.
// A host that fails leaves the others reverted.
func (t *RemoteTuner) Apply(ctx context.Context, stateDir string) (json.RawMessage, error) {
	snaps := map[string]json.RawMessage{}
	for _, role := range t.roles() {
		if t.Agents[role] == nil {
			continue
		}
		snap, err := t.apply(ctx, role)
		if err != nil {
			return nil, errors.Join(err, t.Revert(context.WithoutCancel(ctx)))
		}
		snaps[role] = snap
	}
	b, err := json.Marshal(snaps)
	if err != nil {
		return nil, err
	}
	if stateDir != "" {
		if err := sweeps.WriteFileAtomic(filepath.Join(stateDir, tuning.SnapshotFile), b); err != nil {
			return nil, errors.Join(err, t.Revert(context.WithoutCancel(ctx)))
		}
	}
	return b, nil
}

// Verify implements sweeps.TuningCheck over both hosts.
func (t *RemoteTuner) Verify(ctx context.Context) (json.RawMessage, int, error) {
	reps := map[string]json.RawMessage{}
	drifts := 0
	for _, role := range t.roles() {
		a := t.Agents[role]
		if a == nil {
			continue
		}
		r, _, err := a.call(ctx, tuneVerifyRequest{}, t.applied[role])
		if errors.Is(err, errSessionGone) {
			if _, err := t.apply(ctx, role); err != nil {
				return nil, 0, fmt.Errorf("tune %s again after its agent was replaced: %w", role, err)
			}
			drifts++ // the host ran untuned for a while
			r, _, err = a.call(ctx, tuneVerifyRequest{}, t.applied[role])
		}
		if err != nil {
			return nil, 0, err
		}
		reps[role] = r.Tuning
		drifts += r.Drifts
	}
	b, err := json.Marshal(reps)
	return b, drifts, err
}

// Revert restores every host; a host whose agent ended was reverted by it.
func (t *RemoteTuner) Revert(ctx context.Context) error {
	var errs []error
	for _, role := range t.roles() {
		if a := t.Agents[role]; a != nil && t.applied[role] != nil {
			_, _, err := a.call(ctx, tuneRevertRequest{}, t.applied[role])
			if err != nil && !errors.Is(err, errSessionGone) {
				errs = append(errs, err)
			}
			delete(t.applied, role)
		}
	}
	return errors.Join(errs...)
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
