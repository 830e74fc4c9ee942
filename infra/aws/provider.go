package aws

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"sync"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/sshhost"
)

// Tag keys on everything the provider creates.
const (
	TagCampaign = "linerate:campaign"
	// TagOwner is the run that created the resource (Provider.Owner): Down
	// and GC act on owners, never on campaign names, which two machines
	// may share.
	TagOwner = "linerate:owner"
	// TagLease is when the owner's claim ends (RFC 3339) unless the owner
	// renews it, which a running coordinator does every Config.Renew.
	TagLease    = "linerate:lease"
	TagCreated  = "linerate:created"  // RFC 3339
	TagDeadline = "linerate:deadline" // when the dead-man shutdown fires
)

// Widest ranges SSH is admitted from without Config.SSHFromWide.
const (
	widestSSHFrom4 = 24
	widestSSHFrom6 = 56
)

// Config is the pair to bring up.
type Config struct {
	Access
	InstanceType string // e.g. c8gn.16xlarge
	// Zones are tried in order; on InsufficientInstanceCapacity the next
	// one is. Default: every available zone of the region.
	Zones []string
	// SSHFrom is the only source admitted to port 22: the caller's
	// address, e.g. 203.0.113.7/32. Ranges wider than /24 (IPv4) or /56
	// (IPv6) are refused unless SSHFromWide.
	SSHFrom     netip.Prefix
	SSHFromWide bool
	// PublicKeyFile is imported as the pair's key pair; "" creates one and
	// keeps its private key in the campaign directory until Down. A
	// leading ~/ is the user's home.
	PublicKeyFile  string
	PrivateKeyFile string // the imported key's private half, for SSH
	User           string // login user; default ec2-user (Amazon Linux)
	// DeadMan stops (and so terminates) the instances this long after boot
	// even if nobody calls Down; default 4h.
	DeadMan time.Duration
	// HourlyUSD is the on-demand price of one instance, for the cost
	// prompt; 0 is unknown.
	HourlyUSD float64
	// Instances is how many the pair has, for the cost prompt and the
	// preflight's quota: a server and its clients; 0 is 2. Up launches
	// 1 + Spec.Clients.
	Instances int
	// LinkGbps is the link the campaign expects between its hosts; the
	// preflight refuses a type whose stated network performance is lower
	// (unless allowed). 0: none stated.
	LinkGbps float64
	Dist     string // linerate binaries for upload; default dist

	// Lease is how long resources stay their owner's after the last
	// renewal (default 20m); Renew is how often a running owner renews
	// (default 5m). The gap also absorbs clock skew between machines.
	Lease, Renew time.Duration

	Poll           time.Duration // between state checks; default 5s
	RunningTimeout time.Duration // for both instances to run; default 10m
	SSHTimeout     time.Duration // for SSH to answer; default 5m
	DeleteTimeout  time.Duration // per resource while AWS says "in use"; default 5m
	// NotFoundTimeout is how long an instance ID EC2 does not know yet
	// (right after the launch) is asked again; default 2m.
	NotFoundTimeout time.Duration
}

// Validate names the bad field.
func (c Config) Validate() error {
	if err := c.Access.Validate(); err != nil {
		return err
	}
	if c.InstanceType == "" {
		return errors.New("aws instance-type: empty; want a type like c8gn.16xlarge")
	}
	if err := c.CheckSSHFrom(); err != nil {
		return fmt.Errorf("aws ssh-from: %w", err)
	}
	if ps := launchProblems(c.InstanceType, c.PublicKeyFile, c.PrivateKeyFile, c.DeadMan, c.HourlyUSD); len(ps) > 0 {
		return fmt.Errorf("aws %s: %s", ps[0].name, ps[0].msg)
	}
	return nil
}

// CheckSSHFrom says what is wrong with SSHFrom, if anything: empty, the
// whole internet, or wider than /24 (IPv4) or /56 (IPv6) without
// SSHFromWide.
func (c Config) CheckSSHFrom() error {
	p := c.SSHFrom
	if !p.IsValid() {
		return errors.New("empty; give the address SSH may come from, e.g. 203.0.113.7/32")
	}
	if p.Bits() == 0 {
		return fmt.Errorf("%v admits the whole internet; give your own address (--ssh-from-wide does not allow /0)", p)
	}
	widest := widestSSHFrom6
	if p.Addr().Is4() {
		widest = widestSSHFrom4
	}
	if p.Bits() < widest && !c.SSHFromWide {
		return fmt.Errorf("%v is wider than /%d; give your own address (e.g. 203.0.113.7/32), or --ssh-from-wide if a range this wide is meant", p, widest)
	}
	return nil
}

// DeadManOrDefault is the dead-man delay the pair gets.
func (c Config) DeadManOrDefault() time.Duration {
	if c.DeadMan == 0 {
		return 4 * time.Hour
	}
	return c.DeadMan
}

func (c *Config) defaults() {
	if c.User == "" {
		c.User = "ec2-user"
	}
	c.DeadMan = c.DeadManOrDefault()
	if c.Dist == "" {
		c.Dist = "dist"
	}
	c.PublicKeyFile = sshhost.ExpandHome(c.PublicKeyFile)
	c.PrivateKeyFile = sshhost.ExpandHome(c.PrivateKeyFile)
	set := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	set(&c.Lease, 20*time.Minute)
	set(&c.Renew, 5*time.Minute)
	if c.Renew >= c.Lease {
		c.Renew = c.Lease / 4
	}
	set(&c.Poll, 5*time.Second)
	set(&c.RunningTimeout, 10*time.Minute)
	set(&c.SSHTimeout, 5*time.Minute)
	set(&c.DeleteTimeout, 5*time.Minute)
	set(&c.NotFoundTimeout, 2*time.Minute)
}

// Instance is one launched instance.
type Instance struct {
	ID        string
	Zone      string
	PublicIP  netip.Addr
	PrivateIP netip.Addr
	Index     int32 // launch index: 0 is the server
}

// Account is linerate's handle on one AWS account and region: what
// linerate made there, listed by owner and lease, renewed and removed. It
// needs no launch settings: `infra status`, `down` and `gc` use it alone;
// a Provider is one, and the pair it launches.
type Account struct {
	cfg Config // the access and the waits; the launch fields are the Provider's
	ec2 EC2
	// Log receives progress lines; nil is silent.
	Log func(format string, args ...any)
}

// OpenAccount checks cfg's Access and builds the EC2 client. Of cfg only
// the Access and the waits (Poll, the timeouts) are read: listing,
// renewing and removing need no launch settings.
func OpenAccount(ctx context.Context, cfg Config) (*Account, error) {
	if err := applyTestTiming(&cfg); err != nil {
		return nil, err
	}
	e, _, err := Clients(ctx, cfg.Access)
	if err != nil {
		return nil, err
	}
	cfg.defaults()
	return &Account{cfg: cfg, ec2: e}, nil
}

// Pair is the pair owner brought up for campaign in another process
// (`infra down` reads them from infra.json), its created private key in
// dir: Down removes it.
func (a *Account) Pair(campaign, owner, dir string) *Provider {
	return &Provider{Account: a, owner: owner, campaign: campaign, dir: dir}
}

// Provider is the aws provider: an Account and the pair it launches.
type Provider struct {
	*Account
	ssm SSM
	// WaitSSH returns once addr (ip:22) accepts connections; default a
	// TCP dial loop. Tests replace it (they never reach a real address).
	WaitSSH func(ctx context.Context, addr string) error
	// Connect makes a host of an instance; default an sshhost.Host.
	Connect func(ctx context.Context, in Instance, key, knownHosts string) (infra.Host, error)

	mu        sync.Mutex
	owner     string
	campaign  string // set by Up or Account.Pair: Down has something to do
	dir       string
	deadline  time.Time
	instances []Instance
	hosts     []infra.Host
	stopRenew func()
	// zones are where the preflight found the type offered, in the order
	// to try; nil: no preflight ran, every configured zone is tried.
	zones []string
}

// New checks cfg and builds the SDK clients.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if err := applyTestTiming(&cfg); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e, s, err := Clients(ctx, cfg.Access)
	if err != nil {
		return nil, err
	}
	return NewWithClients(cfg, e, s), nil
}

// NewWithClients is New with given clients. The provider gets a new owner
// ID: what its Up creates is its own.
func NewWithClients(cfg Config, e EC2, s SSM) *Provider {
	cfg.defaults()
	return &Provider{Account: &Account{cfg: cfg, ec2: e}, ssm: s, owner: newOwner()}
}

// newOwner is a run ID: random, short enough for resource names.
func newOwner() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "r" + hex.EncodeToString(b)
}

// Kind is "aws".
func (*Provider) Kind() string { return "aws" }

// Owner is the run ID this provider tags its resources with.
func (p *Provider) Owner() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.owner
}

// Instances are the instances Up launched.
func (p *Provider) Instances() []Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Instance(nil), p.instances...)
}

func (a *Account) logf(format string, args ...any) {
	if a.Log != nil {
		a.Log(format, args...)
	}
}

// HourlyCost is the pair's on-demand price per hour, 0 when unknown.
func (p *Provider) HourlyCost() float64 { return float64(p.cfg.InstanceCount()) * p.cfg.HourlyUSD }

// InstanceCount is Instances, 0 read as 2.
func (c Config) InstanceCount() int {
	if c.Instances == 0 {
		return 2
	}
	return c.Instances
}

// resourceName names the placement group, security group and key pair:
// the owner in the name keeps two runs of one campaign apart.
func resourceName(campaign, owner string) string { return "linerate-" + campaign + "-" + owner }

// ErrNotTornDown marks an error after which resources may still exist:
// Up failed and so did its teardown, or Down could not confirm that
// everything is gone. State that finds them again must be kept.
var ErrNotTornDown = errors.New("not everything was torn down")

// Up brings the pair up. Any failure, and a cancelled context, tears down
// what was created before Up returns (with a fresh context); when that
// teardown fails too, the error wraps ErrNotTornDown. From the start the
// resources' lease is renewed until Down or HandOver.
func (p *Provider) Up(ctx context.Context, s infra.Spec) (pair infra.Pair, err error) {
	if err := s.Validate(); err != nil {
		return infra.Pair{}, err
	}
	if err := p.cfg.Validate(); err != nil {
		return infra.Pair{}, err
	}
	if s.Dir == "" {
		return infra.Pair{}, errors.New("aws up: the spec has no campaign directory (known_hosts and keys are kept there)")
	}
	now := time.Now().UTC()
	p.mu.Lock()
	p.campaign, p.dir, p.deadline = s.Campaign, s.Dir, now.Add(p.cfg.DeadMan)
	owner := p.owner
	p.mu.Unlock()
	p.startRenewing()
	defer func() {
		if err != nil {
			tctx, cancel := infra.TeardownContext(ctx)
			defer cancel()
			p.logf("aws: up failed (%v); tearing down", err)
			if derr := p.Down(tctx); derr != nil {
				err = errors.Join(err, fmt.Errorf("and teardown failed: %w", derr))
			}
		}
	}()
	p.logf("aws: campaign %s, owner %s (lease %v, renewed every %v)", s.Campaign, owner, p.cfg.Lease, p.cfg.Renew)
	name := resourceName(s.Campaign, owner)
	spec := p.tagSpecs(s.Campaign, owner, now)

	// Earlier runs of this campaign whose owner stopped renewing: the
	// same collection as GC, limited to this campaign. They are not in
	// the way (names carry the owner), so a failure is only reported.
	if err := p.collectExpired(ctx, s.Campaign); err != nil {
		if ctx.Err() != nil {
			return infra.Pair{}, fmt.Errorf("aws up: %w", ctx.Err())
		}
		p.logf("aws: leftovers of campaign %s: %v", s.Campaign, err)
	}
	insts, keyFile, err := p.launchPair(ctx, s, name, owner, spec)
	if err != nil {
		return infra.Pair{}, err
	}
	p.mu.Lock()
	p.instances = insts
	p.mu.Unlock()
	hosts, err := p.connect(ctx, insts, keyFile, s.Dir)
	if err != nil {
		return infra.Pair{}, err
	}
	p.logf("aws: pair up: server %s (%v), client %s (%v)", insts[0].ID, insts[0].PrivateIP, insts[1].ID, insts[1].PrivateIP)
	for _, in := range insts[2:] {
		p.logf("aws: and client %s (%v)", in.ID, in.PrivateIP)
	}
	pair = infra.Pair{Server: hosts[0], Client: hosts[1]}
	if len(hosts) > 2 {
		pair.Clients = hosts[1:]
	}
	return pair, nil
}

// launchPair makes what the instances need (key pair, placement group,
// security group) and launches the server and its clients from the
// region's image for the type's architecture, running when it returns;
// keyFile is the private key's path.
func (p *Provider) launchPair(ctx context.Context, s infra.Spec, name, owner string, spec func(types.ResourceType) []types.TagSpecification) (insts []Instance, keyFile string, err error) {
	arch, err := p.architecture(ctx)
	if err != nil {
		return nil, "", err
	}
	ami, err := p.ami(ctx, arch)
	if err != nil {
		return nil, "", err
	}
	if keyFile, err = p.keyPair(ctx, name, s.Dir, spec(types.ResourceTypeKeyPair)); err != nil {
		return nil, "", err
	}
	if err := p.placementGroup(ctx, name, spec(types.ResourceTypePlacementGroup)); err != nil {
		return nil, "", err
	}
	sgID, err := p.securityGroup(ctx, name, s.Campaign, owner, spec(types.ResourceTypeSecurityGroup))
	if err != nil {
		return nil, "", err
	}
	if insts, err = p.launch(ctx, name, ami, sgID, spec, 1+s.ClientCount()); err != nil {
		return nil, "", err
	}
	insts, err = p.waitRunning(ctx, insts)
	return insts, keyFile, err
}

// tagSpecs are the tags of what Up creates at now, by resource type.
func (p *Provider) tagSpecs(campaign, owner string, now time.Time) func(types.ResourceType) []types.TagSpecification {
	tags := []types.Tag{
		{Key: sdkaws.String(TagCampaign), Value: sdkaws.String(campaign)},
		{Key: sdkaws.String(TagOwner), Value: sdkaws.String(owner)},
		{Key: sdkaws.String(TagLease), Value: sdkaws.String(now.Add(p.cfg.Lease).Format(time.RFC3339))},
		{Key: sdkaws.String(TagCreated), Value: sdkaws.String(now.Format(time.RFC3339))},
		{Key: sdkaws.String(TagDeadline), Value: sdkaws.String(now.Add(p.cfg.DeadMan).Format(time.RFC3339))},
		{Key: sdkaws.String("Name"), Value: sdkaws.String(resourceName(campaign, owner))},
	}
	return func(rt types.ResourceType) []types.TagSpecification {
		return []types.TagSpecification{{ResourceType: rt, Tags: tags}}
	}
}

// connect waits for SSH on each instance and connects. Keys are pinned per
// instance: public addresses are recycled, so a new instance may well have
// an address some old one had.
func (p *Provider) connect(ctx context.Context, insts []Instance, keyFile, dir string) ([]infra.Host, error) {
	wait := p.WaitSSH
	if wait == nil {
		wait = dialLoop
	}
	connect := p.Connect
	if connect == nil {
		connect = p.sshConnect
	}
	var hosts []infra.Host
	for _, in := range insts {
		wctx, cancel := context.WithTimeout(ctx, p.cfg.SSHTimeout)
		err := wait(wctx, net.JoinHostPort(in.PublicIP.String(), "22"))
		cancel()
		if err != nil {
			return nil, fmt.Errorf("aws up: wait for SSH on %s (%v): %w", in.ID, in.PublicIP, err)
		}
		h, err := connect(ctx, in, keyFile, filepath.Join(dir, "known_hosts."+in.ID))
		if err != nil {
			return nil, fmt.Errorf("aws up: connect to %s: %w", in.ID, err)
		}
		hosts = append(hosts, h)
		p.mu.Lock()
		p.hosts = append(p.hosts, h)
		p.mu.Unlock()
	}
	return hosts, nil
}

func (p *Provider) sshConnect(ctx context.Context, in Instance, key, known string) (infra.Host, error) {
	role := "server"
	switch {
	case in.Index == 1:
		role = "client"
	case in.Index > 1:
		role = fmt.Sprintf("client-%d", in.Index)
	}
	h, err := sshhost.New(sshhost.Config{
		Label: role + " " + in.ID, Addr: in.PublicIP.String(), User: p.cfg.User, KeyFile: key,
		KnownHosts: known, DataAddr: in.PrivateIP, Dist: p.cfg.Dist,
	})
	if err != nil {
		return nil, err
	}
	// sshd answers before cloud-init has put the key in place; a few tries.
	var last error
	for i := 0; i < 10; i++ {
		if last = h.Connect(ctx); last == nil {
			return h, nil
		}
		var mm *sshhost.HostKeyMismatchError
		if errors.As(last, &mm) {
			return nil, last
		}
		if err := sleep(ctx, p.cfg.Poll); err != nil {
			return nil, err
		}
	}
	return nil, last
}

// dialLoop waits until addr accepts TCP connections.
func dialLoop(ctx context.Context, addr string) error {
	for {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		if err := sleep(ctx, 3*time.Second); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
