package parts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/launch"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
)

// HostBencher runs each cell's load as `linerate bench --json -` on the
// client host of a provider's pair (a network namespace, an SSH host), as
// the design has it: the coordinator never measures.
type HostBencher struct {
	Host infra.Host
}

// Bench implements sweeps.Bencher. It gives no window marks: the runner
// cuts its periodic host snapshots to the window the record reports.
func (b HostBencher) Bench(ctx context.Context, w lab.Workload, _ func(lab.Phase)) (*lab.Result, error) {
	bin, err := b.Host.Linerate(ctx)
	if err != nil {
		return nil, fmt.Errorf("linerate on %s: %w", b.Host.Name(), err)
	}
	argv := append([]string{bin, "bench", "--quiet", "--json", "-"}, w.Args()...)
	var out, errb bytes.Buffer
	cmd := infra.Command{Argv: argv, Stdout: &out, Stderr: &errb}
	if w.Password != "" {
		cmd.Env = []string{"LINERATE_PASSWORD=" + w.Password}
	}
	runErr := b.Host.Exec(ctx, cmd)
	// A failed run still writes its record; the exit code only says how
	// it ended, and the record says the same.
	var res lab.Result
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			return nil, fmt.Errorf("bench on %s: record is not JSON (%v); stderr: %s", b.Host.Name(), err, lastLine(errb.String()))
		}
		if runErr != nil {
			return &res, fmt.Errorf("bench on %s: %s", b.Host.Name(), res.Stop.Error)
		}
		return &res, nil
	}
	if runErr == nil {
		runErr = errors.New("no record")
	}
	return nil, fmt.Errorf("bench on %s: %w; stderr: %s", b.Host.Name(), runErr, lastLine(errb.String()))
}

// NetPlace lets a launcher start servers inside a netns host and reach
// them there.
func NetPlace(h *netns.Host) *launch.NetPlace {
	if h.Namespace == "" {
		return nil
	}
	return &launch.NetPlace{
		Wrap:   []string{"ip", "netns", "exec", h.Namespace},
		Dial:   h.DialContext,
		Listen: h.Listen,
	}
}

// Placement is where a campaign's servers and load run.
type Placement struct {
	Bencher sweeps.Bencher
	Hosts   []sweeps.HostFacts
	// Down tears the hosts down; call it always, also after an error or
	// Ctrl-C (it uses a context of its own).
	Down func(ctx context.Context) error
}

// Place brings up the campaign's hosts. local: everything on this host over
// loopback, the bench in this process. netns: a namespace pair joined by a
// veth (198.18.0.1 server, 198.18.0.2 client); servers start in the server
// namespace and `linerate bench` runs in the client one. Other providers are
// refused with a clear error until they are plugged in.
func Place(ctx context.Context, c *sweeps.Campaign, dir string, starter *Starter) (*Placement, error) {
	noop := func(context.Context) error { return nil }
	switch c.Provider.Kind {
	case sweeps.ProviderLocal:
		return &Placement{Bencher: Bencher{}, Hosts: []sweeps.HostFacts{sweeps.LocalHostFacts("/", "server+client")}, Down: noop}, nil
	case sweeps.ProviderNetns:
		prov, err := netns.FromSettings(c.Provider.Settings)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.File, err)
		}
		pair, err := prov.Up(ctx, infra.Spec{Campaign: c.Name, Dir: dir})
		if err != nil {
			return nil, fmt.Errorf("bring up the netns pair: %w", err)
		}
		srv, ok := pair.Server.(*netns.Host)
		if !ok {
			_ = prov.Down(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("netns provider gave a %T server host", pair.Server)
		}
		starter.Net, starter.Bind = NetPlace(srv), srv.DataAddr().String()
		server := sweeps.LocalHostFacts("/", "server ("+srv.Name()+", "+srv.DataAddr().String()+")")
		client := sweeps.LocalHostFacts("/", "client ("+pair.Client.Name()+", "+pair.Client.DataAddr().String()+")")
		return &Placement{Bencher: HostBencher{Host: pair.Client}, Hosts: []sweeps.HostFacts{server, client}, Down: prov.Down}, nil
	}
	return nil, fmt.Errorf("%s: provider %s: sweep run drives the local and netns providers so far; ssh and aws hosts plug into the runner next (linerate infra up brings them up today)", c.File, c.Provider.Kind)
}
