package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"net/netip"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/sweeps"
)

// skewedHost is a host whose agent's clock is shift off this machine's.
// Its "agent" runs in this process: it answers facts requests as the real
// one does, measuring first (work sleeps for the fault-cost measurement)
// and reading its clock just before it answers. Only what AgentClient
// calls is implemented.
type skewedHost struct {
	infra.Host
	shift time.Duration
	work  time.Duration
}

func (h *skewedHost) Name() string                             { return "skewed" }
func (h *skewedHost) DataAddr() netip.Addr                     { return netip.Addr{} }
func (h *skewedHost) Linerate(context.Context) (string, error) { return "linerate", nil }

// Run answers the client's who-am-I probe: root, no sudo needed.
func (h *skewedHost) Run(context.Context, ...string) ([]byte, error) {
	return []byte("0\n/root\n"), nil
}

func (h *skewedHost) Exec(ctx context.Context, c infra.Command) error {
	enc := json.NewEncoder(c.Stdout)
	if err := enc.Encode(agentReply{Event: "hello", PID: 1}); err != nil {
		return err
	}
	sc := bufio.NewScanner(c.Stdin)
	for sc.Scan() {
		var req envelope
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return err
		}
		rep := agentReply{ID: req.ID, Error: "unknown op " + req.Op}
		if req.Op == opFacts {
			time.Sleep(h.work)
			rep = agentReply{ID: req.ID, Facts: &sweeps.HostFacts{}, Now: time.Now().Add(h.shift)}
		}
		if err := enc.Encode(rep); err != nil {
			return err
		}
	}
	return sc.Err()
}

// An agent whose clock is ahead of this machine's (or behind) gives facts
// whose ClockOffset is its clock minus this one's: +2 s ahead reads +2 s,
// within the answer's trip back (here in-process, so well under the
// tolerance). The agent spends a while measuring before it reads its
// clock; that time must not count, as it would were the offset taken
// against the middle of the request's round trip.
func TestAgentClientMeasuresClockOffset(t *testing.T) {
	t.Parallel()
	const tolerance = 200 * time.Millisecond // generous: a loaded 2-vCPU machine
	for _, shift := range []time.Duration{2 * time.Second, -1500 * time.Millisecond} {
		a := &AgentClient{Host: &skewedHost{shift: shift, work: 3 * tolerance}}
		f, err := a.Facts(context.Background(), "client", true)
		if err != nil {
			t.Fatal(err)
		}
		if d := f.ClockOffset - shift; d.Abs() > tolerance {
			t.Errorf("agent clock %+v off this one: measured offset %+v (%+v wrong)", shift, f.ClockOffset, d)
		}
		if err := a.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	}
}
