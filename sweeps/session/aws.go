package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/aws"
)

// ErrNotLaunched is a pair the operator did not consent to pay for.
var ErrNotLaunched = errors.New("aws pair not launched")

// PairUpAllowance is what the dead-man check adds to a run for bringing
// the pair up, installing the versions and taking it down.
const PairUpAllowance = 15 * time.Minute

func awsRow() *Row {
	return &Row{Kind: "aws", Hosts: HostsAgents, Estimate: remoteEstimate(),
		Settings:  func() Settings { return &aws.Settings{} },
		Check:     awsCheck,
		Clients:   func(s Settings, n int) error { return s.(*aws.Settings).Clients(n) },
		Provider:  awsProvider,
		Preflight: awsPreflight,
		Record: func(st *PairState, p infra.Provider, op *Operator) {
			st.Region, st.Profile, st.KeysEnv, st.Endpoint = op.AWS.Region, op.AWS.Profile, op.KeysFromEnv, op.AWS.Endpoint
			st.Owner = p.(*aws.Provider).Owner()
		},
		Down:   awsDown,
		Status: awsStatus,
		GC:     awsGC,
		Left: func(err error) string {
			if !errors.Is(err, aws.ErrNotTornDown) {
				return ""
			}
			return "what is left is no longer renewed: linerate infra gc --provider aws --region … removes it once its lease has run out (20m)"
		},
	}
}

// awsConfig is the launch configuration: the settings, the operator's
// access and SSH source (theirs, not a shared file's, win).
func awsConfig(s *aws.Settings, op *Operator) aws.Config {
	cfg := s.Config(op.AWS)
	if op.SSHFrom.IsValid() {
		cfg.SSHFrom = op.SSHFrom
	}
	cfg.SSHFromWide, cfg.SSHTimeout = op.SSHFromWide, op.SSHTimeout
	return cfg
}

// awsCheck refuses, before anything is asked of AWS, a campaign run
// without credentials, an SSH source the operator did not allow, and work
// longer than the dead-man shutdown allows (the hosts would shut down
// mid-run).
func awsCheck(st Settings, op *Operator, w Work) error {
	s := st.(*aws.Settings)
	switch {
	case op.AWS.Profile == "" && !op.KeysFromEnv:
		return &CampaignError{errors.New("aws credentials: give --aws-profile NAME or --access-keys-from-env (a campaign file never holds them)")}
	case op.KeysFromEnv && (op.AWS.AccessKeyID == "" || op.AWS.SecretAccessKey == ""):
		return errors.New("--access-keys-from-env: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must both be set")
	}
	cfg := awsConfig(s, op)
	if err := cfg.CheckSSHFrom(); err != nil {
		if op.SSHFrom.IsValid() {
			return fmt.Errorf("--ssh-from: %w", err)
		}
		return infra.Fieldf("ssh-from", "%v", err)
	}
	if err := cfg.Validate(); err != nil {
		return &CampaignError{err}
	}
	dm := cfg.DeadManOrDefault()
	if w.Need+PairUpAllowance <= dm {
		return nil
	}
	return fmt.Errorf("%s needs about %v (estimate) plus %v to bring the pair up, longer than the aws dead-man shutdown after %v (provider.dead-man): the hosts would shut down mid-run; raise provider.dead-man, or run a part with --only",
		w.What, w.Need.Round(time.Second), PairUpAllowance, dm)
}

// awsProvider builds the clients (a profile that does not load fails
// before the operator is asked to spend money), prices the pair and asks.
func awsProvider(ctx context.Context, st Settings, op *Operator, _ string) (infra.Provider, error) {
	cfg := awsConfig(st.(*aws.Settings), op)
	if err := cfg.Validate(); err != nil {
		return nil, &InputError{Err: err}
	}
	p, err := aws.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := aws.LookUpPrice(ctx, &cfg); err != nil {
		op.logf("aws: %v", err)
	}
	if op.Confirm == nil || !op.Confirm(awsCost(cfg)) {
		return nil, ErrNotLaunched
	}
	p.Log = op.Log
	return p, nil
}

// awsPreflight asks AWS, creating nothing, whether the pair can come up:
// permissions (dry runs), the type, its zones and image, the vCPU quota.
func awsPreflight(ctx context.Context, st Settings, op *Operator, campaign string, out io.Writer) (Facts, error) {
	cfg := awsConfig(st.(*aws.Settings), op)
	if err := cfg.Validate(); err != nil {
		return Facts{}, &InputError{Err: err}
	}
	p, err := aws.New(ctx, cfg)
	if err != nil {
		return Facts{}, err
	}
	r := p.Preflight(ctx, aws.PreflightOptions{Campaign: campaign, AllowSlowerLink: op.AllowSlowerLink})
	fmt.Fprintf(out, "aws preflight of %d × %s in %s, nothing created:\n", cfg.InstanceCount(), cfg.InstanceType, cfg.Region)
	r.WriteText(out)
	return Facts{StatedLink: r.Network}, input(r.Err())
}

// awsCost is what the operator is asked to pay for.
func awsCost(cfg aws.Config) string {
	price := "unknown (the Price List API did not say; give the on-demand price of one instance: --hourly-usd, or hourly-usd in a campaign's provider block)"
	n := cfg.InstanceCount()
	if cfg.HourlyUSD > 0 {
		price = fmt.Sprintf("$%.2f per hour for the pair (%d × $%.4f)", float64(n)*cfg.HourlyUSD, n, cfg.HourlyUSD)
	}
	return fmt.Sprintf("About to launch %d × %s in %s: %s.\nThey shut down by themselves after %v; \"linerate infra down --campaign …\" ends them sooner.\n",
		n, cfg.InstanceType, cfg.Region, price, cfg.DeadManOrDefault())
}

// awsAccount is the account handle for listing and removing: the
// operator's access, no launch settings.
func awsAccount(ctx context.Context, a aws.Access, op *Operator) (*aws.Account, error) {
	acct, err := aws.OpenAccount(ctx, aws.Config{Access: a})
	if err != nil {
		return nil, err
	}
	acct.Log = op.Log
	return acct, nil
}

func awsDown(ctx context.Context, st PairState, dir string, op *Operator) error {
	if st.Owner == "" {
		return fmt.Errorf("%s names no owner (an older linerate wrote it); linerate infra gc --region %s removes its pair once its dead-man deadline has passed", stateFile(dir), st.Region)
	}
	acct, err := awsAccount(ctx, st.access(), op)
	if err != nil {
		return err
	}
	return acct.Pair(st.Campaign, st.Owner, dir).Down(ctx)
}

// awsStatus lists what linerate made in the operator's region, if named.
func awsStatus(ctx context.Context, campaign string, op *Operator, out io.Writer) error {
	if op.AWS.Region == "" {
		return nil
	}
	acct, err := awsAccount(ctx, op.AWS, op)
	if err != nil {
		return err
	}
	res, err := acct.Resources(ctx, aws.Selector{Campaign: campaign})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\naws %s\towner\tkind\tid\tname\tstate\tlease until\tdead-man at\n", op.AWS.Region)
	for _, r := range res {
		fmt.Fprintf(out, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Campaign, r.Owner, r.Kind, r.ID, r.Name, r.State, stamp(r.Lease), stamp(r.Deadline))
	}
	if len(res) == 0 {
		fmt.Fprintln(out, "(nothing tagged by linerate)")
	}
	return nil
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339)
}

// awsGC lists every owner's claim with its verdict, then removes the
// expired ones. Owners, not campaign names or local files, decide:
// whatever machine or directory a run was started from, it renews its
// lease while it runs.
func awsGC(ctx context.Context, op *Operator, dryRun bool, out io.Writer) error {
	if op.AWS.Region == "" {
		fmt.Fprintln(out, "aws: skipped (give --region and --profile to collect AWS leftovers)")
		return nil
	}
	acct, err := awsAccount(ctx, op.AWS, op)
	if err != nil {
		return err
	}
	claims, err := acct.Claims(ctx, "")
	if err != nil {
		return err
	}
	if len(claims) == 0 {
		fmt.Fprintln(out, "aws: nothing tagged by linerate")
		return nil
	}
	now := time.Now()
	var expired []aws.Claim
	for _, c := range claims {
		verdict := "keep"
		if c.Expired(now) {
			verdict = "remove"
			if dryRun {
				verdict = "would remove"
			}
			expired = append(expired, c)
		}
		fmt.Fprintf(out, "aws owner %s, campaign %s, %d resources: %s: %s\n", ownerName(c), c.Campaign, len(c.Resources), c.Why(now), verdict)
		for _, r := range c.Resources {
			fmt.Fprintf(out, "  %s %s %s %s\n", r.Kind, r.ID, r.Name, r.State)
		}
	}
	if dryRun {
		return nil
	}
	var failed []error
	for _, c := range expired {
		switch err := acct.Collect(ctx, c); {
		case errors.Is(err, aws.ErrLeaseRenewed):
			fmt.Fprintf(out, "aws owner %s: kept (%v)\n", ownerName(c), aws.ErrLeaseRenewed)
		case err != nil:
			fmt.Fprintf(out, "aws owner %s: failed: %v\n", ownerName(c), err)
			failed = append(failed, err)
		default:
			fmt.Fprintf(out, "aws owner %s: removed\n", ownerName(c))
		}
	}
	if len(failed) > 0 {
		return errReported
	}
	return nil
}

func ownerName(c aws.Claim) string {
	if c.Owner == "" {
		return "(none, campaign " + c.Campaign + ")"
	}
	return c.Owner
}
