package session

// A pair brought up on its own (`linerate infra up`) outlives the process
// that made it: what finds it again is a state file in its directory, and
// each kind's row takes it down, lists it and collects what dead runs
// left.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/aws"
	"github.com/linerate/linerate/infra/sshhost"
	"github.com/linerate/linerate/sweeps"
)

// StateFile is the state `infra up` leaves in the pair's directory.
const StateFile = "infra.json"

func stateFile(dir string) string { return filepath.Join(dir, StateFile) }

// PairState is what `infra up` leaves for `infra down` and `status`: no
// secrets, only where to look.
type PairState struct {
	Kind     string    `json:"kind"`
	Campaign string    `json:"campaign"`
	Region   string    `json:"region,omitempty"`
	Profile  string    `json:"profile,omitempty"`
	Owner    string    `json:"owner,omitempty"` // aws: the owner tag of what up made
	KeysEnv  bool      `json:"access_keys_from_env,omitempty"`
	Endpoint string    `json:"endpoint,omitempty"`
	Server   string    `json:"server,omitempty"`
	Client   string    `json:"client,omitempty"`
	Started  time.Time `json:"started"`
}

// access is the AWS access the state names, keys from the environment
// when it says so.
func (st PairState) access() aws.Access {
	a := aws.Access{Region: st.Region, Profile: st.Profile, Endpoint: st.Endpoint}
	if st.KeysEnv {
		a.KeysFromEnv()
	}
	return a
}

// ReadState reads dir's state file.
func ReadState(dir string) (PairState, error) {
	var st PairState
	b, err := os.ReadFile(stateFile(dir))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %w", stateFile(dir), err)
	}
	return st, nil
}

func writeState(dir string, st PairState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return sweeps.WriteFileAtomic(stateFile(dir), append(b, '\n'))
}

// UpFlags are `infra up`'s flags: the pair's kind and where it is kept,
// the operator's --ssh-from, and each kind's settings named as its
// settings are.
type UpFlags struct {
	Kind    string
	Spec    infra.Spec
	SSHFrom string
	Dist    string // ssh, aws
	SSH     sshhost.Settings
	AWS     aws.Settings // its region is the operator's
	Zones   string       // aws, comma-separated
}

// UpFromFlags checks f and brings its pair up (Up). Its errors in f are
// *InputError.
func (t *Table) UpFromFlags(ctx context.Context, f UpFlags, op *Operator) (*UpResult, error) {
	if f.Spec.Campaign == "" {
		return nil, input(errors.New("up: --campaign is required"))
	}
	if err := f.Spec.Validate(); err != nil {
		return nil, input(fmt.Errorf("up: --%s", strings.TrimPrefix(err.Error(), "spec ")))
	}
	var err error
	if op.SSHFrom, err = ParseSSHFrom(f.SSHFrom); err != nil {
		return nil, fmt.Errorf("up: %w", err)
	}
	var settings Settings
	if row, ok := t.Row(f.Kind); ok {
		settings = row.Settings()
	}
	switch s := settings.(type) {
	case *sshhost.Settings:
		if f.SSH.Server.Address == "" || f.SSH.Client.Address == "" || f.SSH.Key == "" {
			return nil, input(errors.New("up: the ssh provider needs --server, --client and --key"))
		}
		*s = f.SSH
		s.Dist = f.Dist
	case *aws.Settings:
		*s = f.AWS
		s.Region, s.Dist = op.AWS.Region, f.Dist
		if f.Zones != "" {
			s.Zones = strings.Split(f.Zones, ",")
		}
	}
	return t.Up(ctx, f.Kind, settings, f.Spec, op)
}

// HostLine is one host of a pair that is up, for the operator.
type HostLine struct {
	Name, Addr, How string
}

// UpResult is a pair `infra up` brought up.
type UpResult struct {
	Kind     string
	Campaign string
	Hosts    []HostLine
	// Stays is false when the pair is nothing that outlives this process
	// (`infra down` only forgets it).
	Stays bool
}

// WriteText says what is up, a host a line.
func (r *UpResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s pair up for campaign %s\n", r.Kind, r.Campaign)
	for _, h := range r.Hosts {
		fmt.Fprintf(w, "  %-8s %-16s %s\n", h.Name, h.Addr, h.How)
	}
	if !r.Stays {
		// Nothing was created; no state to keep beyond the record.
		fmt.Fprintln(w, "(nothing to take down for this provider; infra down only forgets it)")
	}
}

// Up brings up a pair of kind with settings s that outlives this process
// (`infra up`): its state is written to spec.Dir before anything is made,
// so Down can always find what to remove; a failed or interrupted Up has
// torn down already and removes it, unless that teardown failed too
// (then the state stays for Down to finish). A pair that can be handed
// over (aws) is: it is the operator's until its dead-man deadline.
func (t *Table) Up(ctx context.Context, kind string, s Settings, spec infra.Spec, op *Operator) (*UpResult, error) {
	row, ok := t.Row(kind)
	switch {
	case kind == "":
		return nil, input(fmt.Errorf("up: --provider is required (%s)", t.kinds(nil)))
	case !ok:
		return nil, input(fmt.Errorf("up: --provider %q: want %s", kind, t.kinds(nil)))
	}
	if err := s.Validate(); err != nil {
		return nil, input(flagErrors("up", err))
	}
	if _, err := row.preflight(ctx, s, op, spec.Campaign, nil); err != nil {
		return nil, fmt.Errorf("up: %w", err)
	}
	st := PairState{Kind: kind, Campaign: spec.Campaign, Started: time.Now().UTC()}
	prov, err := row.Provider(ctx, s, op, spec.Campaign)
	if err != nil {
		return nil, fmt.Errorf("up: %w", err)
	}
	if row.Record != nil {
		row.Record(&st, prov, op)
	}
	if old, err := ReadState(spec.Dir); err == nil {
		return nil, fmt.Errorf("up: a %s pair of campaign %s is already up (since %s); take it down first: linerate infra down --campaign %s",
			old.Kind, old.Campaign, old.Started.Format(time.RFC3339), spec.Campaign)
	}
	// State first: a crash during Up still leaves Down something to read.
	if err := writeState(spec.Dir, st); err != nil {
		return nil, err
	}
	pair, err := prov.Up(ctx, spec)
	if err == nil {
		err = handOver(ctx, prov, op)
	}
	if err != nil {
		// Providers tear down what they made before returning an error;
		// the state goes only when that worked, so Down can retry.
		err = fmt.Errorf("up: %w", err)
		if t.Left(kind, err) != "" {
			return nil, errors.Join(err, fmt.Errorf("%s kept: linerate infra down --campaign %s --dir %s finishes the teardown", StateFile, spec.Campaign, spec.Dir))
		}
		os.Remove(stateFile(spec.Dir))
		return nil, err
	}
	res := &UpResult{Kind: prov.Kind(), Campaign: spec.Campaign, Stays: row.Down != nil}
	for _, h := range []infra.Host{pair.Server, pair.Client} {
		how := ""
		if e, ok := h.(infra.Entered); ok && e.Enter() != nil {
			how = strings.Join(e.Enter(), " ") + " …"
		}
		res.Hosts = append(res.Hosts, HostLine{Name: h.Name(), Addr: h.DataAddr().String(), How: how})
		h.Close()
	}
	return res, nil
}

// handOver gives a pair that outlives this process to the operator (an
// aws pair's lease then runs to its dead-man deadline instead of being
// renewed). When that fails the pair is taken down, as any failed up.
func handOver(ctx context.Context, p infra.Provider, op *Operator) error {
	h, ok := p.(interface {
		HandOver(context.Context) (time.Time, error)
	})
	if !ok {
		return nil
	}
	until, err := h.HandOver(ctx)
	if err == nil {
		op.logf("%s: the pair is yours until %s (its dead-man shutdown); infra gc leaves it alone until then", p.Kind(), until.Local().Format(time.RFC3339))
		return nil
	}
	dctx, cancel := infra.TeardownContext(ctx)
	defer cancel()
	return errors.Join(err, p.Down(dctx))
}

// flagErrors names the settings' fields as the flags that set them.
func flagErrors(verb string, err error) error {
	fields, other := infra.FieldErrors(err)
	var errs []error
	for _, f := range fields {
		errs = append(errs, fmt.Errorf("%s: --%s: %s", verb, f.Field, f.Msg))
	}
	for _, o := range other {
		errs = append(errs, fmt.Errorf("%s: %w", verb, o))
	}
	return errors.Join(errs...)
}

// ErrNothingUp is a Down with no state to read.
var ErrNothingUp = errors.New("nothing is up")

// Down takes down the pair `infra up` left in dir, the teardown running
// to its end after Ctrl-C (within its own limit). The state goes only once
// the teardown is confirmed.
func (t *Table) Down(ctx context.Context, dir, campaign string, op *Operator) (PairState, error) {
	if campaign == "" {
		return PairState{}, input(errors.New("down: --campaign is required"))
	}
	st, err := ReadState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return st, fmt.Errorf("down: no %s in %s: %w for campaign %s (infra gc finds leftovers)", StateFile, dir, ErrNothingUp, campaign)
	}
	if err != nil {
		return st, fmt.Errorf("down: %w", err)
	}
	dctx, cancel := infra.TeardownContext(ctx)
	defer cancel()
	if row, ok := t.Row(st.Kind); ok && row.Down != nil {
		if err := row.Down(dctx, st, dir, op); err != nil {
			return st, fmt.Errorf("down: %w", err)
		}
	}
	os.Remove(stateFile(dir))
	return st, nil
}

// Status writes what is up: the campaign's pair from its state in dir
// (when campaign is given), then what each kind lists (with the access
// the state names when the operator gives none), in aligned columns.
func (t *Table) Status(ctx context.Context, campaign, dir string, op *Operator, w io.Writer) error {
	out := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer out.Flush()
	if campaign != "" {
		st, err := ReadState(dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			fmt.Fprintf(out, "campaign %s: no pair up (no %s in %s)\n", campaign, StateFile, dir)
		case err != nil:
			return fmt.Errorf("status: %w", err)
		default:
			fmt.Fprintf(out, "campaign %s: %s pair up since %s\n", st.Campaign, st.Kind, st.Started.Format(time.RFC3339))
			if st.Region != "" && op.AWS.Region == "" {
				op.AWS, op.KeysFromEnv = st.access(), st.KeysEnv
			}
		}
	}
	for _, r := range t.rows {
		if r.Status == nil {
			continue
		}
		if err := r.Status(ctx, campaign, op, out); err != nil {
			return fmt.Errorf("status: %w", err)
		}
	}
	return nil
}

// errReported is a failure its row has written out already.
var errReported = errors.New("failed (reported above)")

// GC collects what dead runs left, of kind ("" for every kind that can
// leave anything), within the teardown limit after Ctrl-C. Each row lists
// what it finds and why before it removes anything. ok is false when
// anything failed; err holds the failures not written to out.
func (t *Table) GC(ctx context.Context, kind string, dryRun bool, op *Operator, out io.Writer) (ok bool, err error) {
	hasGC := func(r *Row) bool { return r.GC != nil }
	if r, found := t.Row(kind); kind != "" && (!found || r.GC == nil) {
		all := "all"
		if n := len(t.rowsWith(hasGC)); n == 2 {
			all = "both"
		}
		return false, input(fmt.Errorf("gc: --provider %q: want %s (default %s)", kind, t.kinds(hasGC), all))
	}
	dctx, cancel := infra.TeardownContext(ctx)
	defer cancel()
	var errs []error
	ok = true
	for _, r := range t.rows {
		if r.GC == nil || (kind != "" && r.Kind != kind) {
			continue
		}
		if err := r.GC(dctx, op, dryRun, out); err != nil {
			ok = false
			if !errors.Is(err, errReported) {
				errs = append(errs, fmt.Errorf("gc: %w", err))
			}
		}
	}
	return ok, errors.Join(errs...)
}
