package session

// The provider table: one row per kind of host pair, holding all the
// session knows of it. A new provider is its package under infra/ and one
// row here (or in a table a caller builds).

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/aws"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/infra/sshhost"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
)

// Settings are one kind's provider settings: its package's Settings,
// decoded from a campaign's provider block or built from flags.
type Settings interface {
	// Validate names what is wrong by field (infra.FieldError).
	Validate() error
}

// Hosts is how a campaign uses a kind's pair: where the servers run, and
// what starts, samples and tunes them.
type Hosts int

const (
	// HostsHere: this process starts the servers on loopback, runs the
	// load in-process, and samples and tunes this machine.
	HostsHere Hosts = iota
	// HostsNamespaces: the pair is two network namespaces of this machine
	// (*netns.Host). This process starts the servers in the server's and
	// samples them; `linerate bench` runs in the client's; an agent in
	// each tunes it (the server's also what the kernel keeps once).
	HostsNamespaces
	// HostsAgents: a `linerate agent` on each host starts, samples and
	// tunes there; `linerate bench` runs on the client host. Versions
	// resolve on the server host, once it is up.
	HostsAgents
)

// Work is what a run needs its hosts for: a name for messages ("the
// plan", "the soak") and about how long.
type Work struct {
	What string
	Need time.Duration
}

// Operator is what the operator says for a run beside the campaign, and
// a campaign file never does: credentials, their own address, consent to
// spend.
type Operator struct {
	// AWS is the access to an AWS account; its region, when set, wins over
	// the campaign's.
	AWS aws.Access
	// KeysFromEnv: AWS's static keys came from the environment, so both
	// must be there.
	KeysFromEnv bool
	// SSHFrom, when valid, wins over the campaign's ssh-from; SSHFromWide
	// admits one wider than /24 (IPv4) or /56 (IPv6).
	SSHFrom     netip.Prefix
	SSHFromWide bool
	// SSHTimeout is how long new instances get to answer SSH; 0 is the
	// provider's default.
	SSHTimeout time.Duration
	// AllowSlowerLink lets the aws preflight pass an instance type whose
	// stated network performance is below the campaign's link-gbps.
	AllowSlowerLink bool
	// Confirm is told what bringing the pair up costs and says whether to
	// go on; nil refuses whatever costs money.
	Confirm func(cost string) bool
	// Log receives progress lines; nil is silent.
	Log func(format string, args ...any)
}

func (op *Operator) logf(format string, args ...any) {
	if op.Log != nil {
		op.Log(format, args...)
	}
}

// CampaignError is a check's error about the campaign as a whole (what
// it asks for needs credentials): the session names the campaign's file.
type CampaignError struct{ Err error }

func (e *CampaignError) Error() string { return e.Err.Error() }
func (e *CampaignError) Unwrap() error { return e.Err }

// Row is one kind of provider.
type Row struct {
	Kind  string
	Hosts Hosts
	// Estimate is the plan's estimate on these hosts; what a campaign's
	// estimate block gives stays over it.
	Estimate sweeps.EstimateParams
	// Settings is a new zero value (a pointer) of the kind's settings, for
	// a campaign's provider block to be decoded into.
	Settings func() Settings
	// Check finds, before anything is made, what the settings and the
	// operator's word cannot run: unreadable key files, no credentials,
	// work that outlasts the hosts. infra.FieldErrors name settings
	// fields, a *CampaignError the campaign; others name flags. nil:
	// nothing beyond Validate.
	Check func(s Settings, op *Operator, w Work) error
	// Clients says why the settings cannot give n client hosts (clients:
	// N), as field errors; nil: any number (HostsHere: one).
	Clients func(s Settings, n int) error
	// Provider is the provider of the pair the settings describe, built
	// after the operator's consent where the pair costs money (ErrNotLaunched
	// without it). keep, when set, names a pair that outlives this process
	// (`infra up`).
	Provider func(ctx context.Context, s Settings, op *Operator, keep string) (infra.Provider, error)
	// Preflight checks, creating nothing, that the pair the settings
	// describe can come up for campaign, writes what it checked to out,
	// and returns what it learnt that the run records; its error (an
	// *InputError) names the first check that failed. nil: nothing to
	// check.
	Preflight func(ctx context.Context, s Settings, op *Operator, campaign string, out io.Writer) (Facts, error)
	// Record notes in the state `infra up` leaves what Down needs to find
	// the pair again; nil: nothing beyond the kind.
	Record func(st *PairState, p infra.Provider, op *Operator)
	// Down removes a pair `infra up` left, found from its state; nil:
	// nothing outlives the process that brought it up.
	Down func(ctx context.Context, st PairState, dir string, op *Operator) error
	// Status writes what of this kind exists, for `infra status`; nil:
	// nothing to list.
	Status func(ctx context.Context, campaign string, op *Operator, out io.Writer) error
	// GC lists what dead runs left, with the reason, and unless dryRun
	// removes it (`infra gc`); nil: nothing is ever left.
	GC func(ctx context.Context, op *Operator, dryRun bool, out io.Writer) error
	// Left says how what a failed teardown left is found later ("": it
	// is not).
	Left func(err error) string
}

// Table is the provider table: its rows by kind, in the order messages
// list them.
type Table struct{ rows []*Row }

// NewTable is a table of rows.
func NewTable(rows ...*Row) *Table { return &Table{rows: rows} }

// Default is the production table: local, netns, ssh and aws.
func Default() *Table {
	return NewTable(localRow(), netnsRow(), sshRow(), awsRow())
}

// Row is kind's row.
func (t *Table) Row(kind string) (*Row, bool) {
	for _, r := range t.rows {
		if r.Kind == kind {
			return r, true
		}
	}
	return nil, false
}

// rowsWith are the rows having says (nil: all).
func (t *Table) rowsWith(having func(*Row) bool) []*Row {
	var rs []*Row
	for _, r := range t.rows {
		if having == nil || having(r) {
			rs = append(rs, r)
		}
	}
	return rs
}

// kinds lists the kinds of the rows having says (nil: all) for messages:
// "local, netns, ssh or aws".
func (t *Table) kinds(having func(*Row) bool) string {
	var ks []string
	for _, r := range t.rowsWith(having) {
		ks = append(ks, r.Kind)
	}
	if len(ks) < 2 {
		return strings.Join(ks, "")
	}
	return strings.Join(ks[:len(ks)-1], ", ") + " or " + ks[len(ks)-1]
}

// Load reads a campaign file and its provider block: an unknown kind and
// settings its kind does not take are errors at their place, as the rest
// of the campaign's are; the plan's estimate is the kind's.
func (t *Table) Load(path string) (*sweeps.Campaign, error) {
	c, err := sweeps.LoadCampaign(path)
	if err != nil {
		return nil, err
	}
	if _, _, err := t.settings(c); err != nil {
		return nil, err
	}
	return c, nil
}

// settings are c's row and its provider settings, decoded; c's estimate
// defaults become the row's.
func (t *Table) settings(c *sweeps.Campaign) (*Row, Settings, error) {
	row, ok := t.Row(c.Provider.Kind)
	if !ok {
		return nil, nil, c.Provider.Locate(infra.Fieldf("kind", "%q: use %s", c.Provider.Kind, t.kinds(nil)))
	}
	c.SetEstimateDefaults(row.Estimate)
	c.Provider.NoLink = row.Hosts == HostsHere
	s := row.Settings()
	if err := c.Provider.Decode(s); err != nil {
		return nil, nil, err
	}
	if err := checkClients(c, row, s); err != nil {
		return nil, nil, err
	}
	return row, s, nil
}

// remoteEstimate is the estimate on hosts of their own: SSH round trips
// per cell, containers to start.
func remoteEstimate() sweeps.EstimateParams {
	return sweeps.EstimateParams{ServerStart: lab.Duration(10 * time.Second),
		CellOverhead: lab.Duration(3 * time.Second), PrefillRate: 2 << 30}
}

// localSettings are the local provider's: none.
type localSettings struct{}

func (localSettings) Validate() error { return nil }

func localRow() *Row {
	return &Row{Kind: "local", Hosts: HostsHere, Estimate: sweeps.DefaultEstimate(),
		Settings: func() Settings { return &localSettings{} },
		Provider: func(context.Context, Settings, *Operator, string) (infra.Provider, error) { return netns.Local{}, nil },
	}
}

func netnsRow() *Row {
	return &Row{Kind: "netns", Hosts: HostsNamespaces, Estimate: sweeps.DefaultEstimate(),
		Settings: func() Settings { return &netns.Settings{} },
		Provider: func(_ context.Context, s Settings, _ *Operator, keep string) (infra.Provider, error) {
			return &netns.Provider{Binary: s.(*netns.Settings).Binary, Keep: keep}, nil
		},
		Down: func(ctx context.Context, st PairState, _ string, _ *Operator) error {
			return (&netns.Provider{Keep: st.Campaign}).Down(ctx)
		},
		Status: netnsStatus,
		GC:     netnsGC,
	}
}

func sshRow() *Row {
	return &Row{Kind: "ssh", Hosts: HostsAgents, Estimate: remoteEstimate(),
		Settings: func() Settings { return &sshhost.Settings{} },
		Check:    func(s Settings, _ *Operator, _ Work) error { return s.(*sshhost.Settings).Check() },
		Clients: func(s Settings, n int) error {
			if got := s.(*sshhost.Settings).ClientCount(); got != n {
				field := "client"
				if got > 1 {
					field = "clients"
				}
				return infra.Fieldf(field, "%d client host(s) named; the campaign's clients: %d needs %d (list them under clients)", got, n, n)
			}
			return nil
		},
		Provider: func(_ context.Context, s Settings, _ *Operator, _ string) (infra.Provider, error) {
			return s.(*sshhost.Settings).Provider()
		},
		Record: func(st *PairState, p infra.Provider, _ *Operator) {
			sp := p.(*sshhost.Provider)
			st.Server, st.Client = sp.Server.User+"@"+sp.Server.Addr, sp.Client.User+"@"+sp.Client.Addr
		},
	}
}

// netnsStatus lists linerate's namespaces, leftovers marked.
func netnsStatus(_ context.Context, _ string, _ *Operator, out io.Writer) error {
	names, err := netns.Owned()
	if err != nil || len(names) == 0 {
		return nil
	}
	left, _ := netns.Leftovers()
	dead := map[string]bool{}
	for _, l := range left {
		dead[l.Name] = true
	}
	fmt.Fprintln(out, "\nnetns namespaces\tstate")
	for _, n := range names {
		s := "in use"
		if dead[n] {
			s = "leftover (its process is gone)"
		}
		fmt.Fprintf(out, "%s\t%s\n", n, s)
	}
	return nil
}

// netnsGC removes the namespaces of processes that are gone.
func netnsGC(ctx context.Context, _ *Operator, dryRun bool, out io.Writer) error {
	left, err := netns.Leftovers()
	if err != nil {
		return err
	}
	for _, l := range left {
		fmt.Fprintf(out, "netns %s (process %d gone): ", l.Name, l.PID)
		if dryRun {
			fmt.Fprintln(out, "would remove")
		}
	}
	if dryRun || len(left) == 0 {
		return nil
	}
	done, err := netns.Cleanup(ctx)
	fmt.Fprintf(out, "removed %d\n", len(done))
	return err
}
