package aws

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/sshhost"
)

// Tag keys on everything the provider creates.
const (
	TagCampaign = "linerate:campaign"
	TagCreated  = "linerate:created"  // RFC 3339
	TagDeadline = "linerate:deadline" // when the dead-man shutdown fires
)

// Config is the pair to bring up.
type Config struct {
	Access
	InstanceType string // e.g. c8gn.16xlarge
	// Zones are tried in order; on InsufficientInstanceCapacity the next
	// one is. Default: every available zone of the region.
	Zones []string
	// SSHFrom is the only source admitted to port 22: the caller's
	// address, e.g. 203.0.113.7/32.
	SSHFrom netip.Prefix
	// PublicKeyFile is imported as the pair's key pair; "" creates one and
	// keeps its private key in the campaign directory.
	PublicKeyFile  string
	PrivateKeyFile string // the imported key's private half, for SSH
	User           string // login user; default ec2-user (Amazon Linux)
	// DeadMan stops (and so terminates) the instances this long after boot
	// even if nobody calls Down; default 4h.
	DeadMan time.Duration
	// HourlyUSD is the on-demand price of one instance, for the cost
	// prompt; 0 is unknown.
	HourlyUSD float64
	Dist      string // linerate binaries for upload; default dist

	Poll           time.Duration // between state checks; default 5s
	RunningTimeout time.Duration // for both instances to run; default 10m
	SSHTimeout     time.Duration // for SSH to answer; default 5m
	DeleteTimeout  time.Duration // per resource while AWS says "in use"; default 5m
}

// Validate names the bad field.
func (c Config) Validate() error {
	if err := c.Access.Validate(); err != nil {
		return err
	}
	if c.InstanceType == "" || !strings.Contains(c.InstanceType, ".") {
		return fmt.Errorf("aws instance-type: %q: want a type like c8gn.16xlarge", c.InstanceType)
	}
	if !c.SSHFrom.IsValid() {
		return errors.New("aws ssh-from: empty; give the address SSH may come from, e.g. 203.0.113.7/32")
	}
	if c.SSHFrom.Bits() == 0 {
		return fmt.Errorf("aws ssh-from: %v admits the whole internet; give your own address", c.SSHFrom)
	}
	if (c.PublicKeyFile == "") != (c.PrivateKeyFile == "") {
		return errors.New("aws key: give both the public and the private key file, or neither (a key pair is then created)")
	}
	if c.DeadMan < 0 || (c.DeadMan > 0 && c.DeadMan < 10*time.Minute) {
		return fmt.Errorf("aws dead-man: %v; want at least 10m", c.DeadMan)
	}
	if c.HourlyUSD < 0 {
		return fmt.Errorf("aws hourly-usd: %v is negative", c.HourlyUSD)
	}
	return nil
}

func (c *Config) defaults() {
	if c.User == "" {
		c.User = "ec2-user"
	}
	if c.DeadMan == 0 {
		c.DeadMan = 4 * time.Hour
	}
	if c.Dist == "" {
		c.Dist = "dist"
	}
	if c.Poll == 0 {
		c.Poll = 5 * time.Second
	}
	if c.RunningTimeout == 0 {
		c.RunningTimeout = 10 * time.Minute
	}
	if c.SSHTimeout == 0 {
		c.SSHTimeout = 5 * time.Minute
	}
	if c.DeleteTimeout == 0 {
		c.DeleteTimeout = 5 * time.Minute
	}
}

// Instance is one launched instance.
type Instance struct {
	ID        string
	Zone      string
	PublicIP  netip.Addr
	PrivateIP netip.Addr
	Index     int32 // launch index: 0 is the server
}

// Provider is the aws provider.
type Provider struct {
	cfg Config
	ec2 EC2
	ssm SSM
	// WaitSSH returns once addr (ip:22) accepts connections; default a
	// TCP dial loop. Tests replace it (they never reach a real address).
	WaitSSH func(ctx context.Context, addr string) error
	// Connect makes a host of an instance; default an sshhost.Host.
	Connect func(ctx context.Context, in Instance, key, knownHosts string) (infra.Host, error)
	// Log receives progress lines; nil is silent.
	Log func(format string, args ...any)

	mu        sync.Mutex
	campaign  string
	instances []Instance
	hosts     []infra.Host
}

// New checks cfg and builds the SDK clients.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e, s, err := Clients(ctx, cfg.Access)
	if err != nil {
		return nil, err
	}
	return NewWithClients(cfg, e, s), nil
}

// NewWithClients is New with given clients.
func NewWithClients(cfg Config, e EC2, s SSM) *Provider {
	cfg.defaults()
	return &Provider{cfg: cfg, ec2: e, ssm: s}
}

// Kind is "aws".
func (*Provider) Kind() string { return "aws" }

// Instances are the instances Up launched.
func (p *Provider) Instances() []Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Instance(nil), p.instances...)
}

func (p *Provider) logf(format string, args ...any) {
	if p.Log != nil {
		p.Log(format, args...)
	}
}

// HourlyCost is the pair's on-demand price per hour, 0 when unknown.
func (p *Provider) HourlyCost() float64 { return 2 * p.cfg.HourlyUSD }

// resourceName names the placement group, security group and key pair.
func resourceName(campaign string) string { return "linerate-" + campaign }

// Up brings the pair up. Any failure, and a cancelled context, tears down
// what was created before Up returns (with a fresh context).
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
	p.mu.Lock()
	p.campaign = s.Campaign
	p.mu.Unlock()
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
	name := resourceName(s.Campaign)
	now := time.Now().UTC()
	tags := []types.Tag{
		{Key: sdkaws.String(TagCampaign), Value: sdkaws.String(s.Campaign)},
		{Key: sdkaws.String(TagCreated), Value: sdkaws.String(now.Format(time.RFC3339))},
		{Key: sdkaws.String(TagDeadline), Value: sdkaws.String(now.Add(p.cfg.DeadMan).Format(time.RFC3339))},
		{Key: sdkaws.String("Name"), Value: sdkaws.String(name)},
	}
	spec := func(rt types.ResourceType) []types.TagSpecification {
		return []types.TagSpecification{{ResourceType: rt, Tags: tags}}
	}

	// A crashed earlier run of this campaign left things under the same
	// names; the campaign lock says no live run owns them.
	if old, err := p.Resources(ctx, s.Campaign); err != nil {
		return infra.Pair{}, fmt.Errorf("aws up: %w", err)
	} else if len(old) > 0 {
		p.logf("aws: removing %d leftovers of an earlier run of campaign %s", len(old), s.Campaign)
		if err := p.downCampaign(ctx, s.Campaign, nil); err != nil {
			return infra.Pair{}, fmt.Errorf("aws up: remove leftovers: %w", err)
		}
	}
	arch, err := p.architecture(ctx)
	if err != nil {
		return infra.Pair{}, err
	}
	ami, err := p.ami(ctx, arch)
	if err != nil {
		return infra.Pair{}, err
	}
	keyFile, err := p.keyPair(ctx, name, s.Dir, spec(types.ResourceTypeKeyPair))
	if err != nil {
		return infra.Pair{}, err
	}
	if _, err := p.ec2.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{
		GroupName: sdkaws.String(name), Strategy: types.PlacementStrategyCluster,
		TagSpecifications: spec(types.ResourceTypePlacementGroup),
	}); err != nil {
		return infra.Pair{}, fmt.Errorf("aws up: create placement group %s: %w", name, err)
	}
	if err := p.waitPlacementGroup(ctx, name); err != nil {
		return infra.Pair{}, err
	}
	sg, err := p.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName:         sdkaws.String(name),
		Description:       sdkaws.String("linerate campaign " + s.Campaign + ": SSH from the operator, all traffic within the group"),
		TagSpecifications: spec(types.ResourceTypeSecurityGroup),
	})
	if err != nil {
		return infra.Pair{}, fmt.Errorf("aws up: create security group %s: %w", name, err)
	}
	sgID := sdkaws.ToString(sg.GroupId)
	if _, err := p.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{
		GroupId: sg.GroupId,
		IpPermissions: []types.IpPermission{
			{IpProtocol: sdkaws.String("tcp"), FromPort: sdkaws.Int32(22), ToPort: sdkaws.Int32(22),
				IpRanges: []types.IpRange{{CidrIp: sdkaws.String(p.cfg.SSHFrom.String()), Description: sdkaws.String("linerate operator")}}},
			{IpProtocol: sdkaws.String("-1"), UserIdGroupPairs: []types.UserIdGroupPair{{GroupId: sg.GroupId}}},
		},
	}); err != nil {
		return infra.Pair{}, fmt.Errorf("aws up: authorize %s: %w", sgID, err)
	}
	insts, err := p.launch(ctx, name, ami, sgID, spec)
	if err != nil {
		return infra.Pair{}, err
	}
	if insts, err = p.waitRunning(ctx, insts); err != nil {
		return infra.Pair{}, err
	}
	p.mu.Lock()
	p.instances = insts
	p.mu.Unlock()
	wait := p.WaitSSH
	if wait == nil {
		wait = dialLoop
	}
	connect := p.Connect
	if connect == nil {
		connect = p.sshConnect
	}
	// Keys are pinned per instance: public addresses are recycled, so a
	// new instance may well have an address some old one had.
	var hosts []infra.Host
	for _, in := range insts {
		wctx, cancel := context.WithTimeout(ctx, p.cfg.SSHTimeout)
		err := wait(wctx, net.JoinHostPort(in.PublicIP.String(), "22"))
		cancel()
		if err != nil {
			return infra.Pair{}, fmt.Errorf("aws up: wait for SSH on %s (%v): %w", in.ID, in.PublicIP, err)
		}
		h, err := connect(ctx, in, keyFile, filepath.Join(s.Dir, "known_hosts."+in.ID))
		if err != nil {
			return infra.Pair{}, fmt.Errorf("aws up: connect to %s: %w", in.ID, err)
		}
		hosts = append(hosts, h)
		p.mu.Lock()
		p.hosts = append(p.hosts, h)
		p.mu.Unlock()
	}
	p.logf("aws: pair up: server %s (%v), client %s (%v)", insts[0].ID, insts[0].PrivateIP, insts[1].ID, insts[1].PrivateIP)
	return infra.Pair{Server: hosts[0], Client: hosts[1]}, nil
}

// architecture asks EC2 which architecture the instance type has.
func (p *Provider) architecture(ctx context.Context) (string, error) {
	out, err := p.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{types.InstanceType(p.cfg.InstanceType)},
	})
	if err != nil {
		return "", fmt.Errorf("aws up: describe instance type %s: %w", p.cfg.InstanceType, err)
	}
	if len(out.InstanceTypes) != 1 || out.InstanceTypes[0].ProcessorInfo == nil {
		return "", fmt.Errorf("aws up: instance type %s: not offered in %s", p.cfg.InstanceType, p.cfg.Region)
	}
	for _, a := range out.InstanceTypes[0].ProcessorInfo.SupportedArchitectures {
		if a == types.ArchitectureTypeArm64 || a == types.ArchitectureTypeX8664 {
			return string(a), nil
		}
	}
	return "", fmt.Errorf("aws up: instance type %s: architectures %v; linerate runs on arm64 and x86_64",
		p.cfg.InstanceType, out.InstanceTypes[0].ProcessorInfo.SupportedArchitectures)
}

// AMIParameter is the public SSM parameter naming the current Amazon Linux
// 2023 image for arch (arm64 or x86_64).
func AMIParameter(arch string) string {
	return "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-" + arch
}

func (p *Provider) ami(ctx context.Context, arch string) (string, error) {
	out, err := p.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: sdkaws.String(AMIParameter(arch))})
	if err != nil {
		return "", fmt.Errorf("aws up: AMI parameter %s: %w", AMIParameter(arch), err)
	}
	if out.Parameter == nil || !strings.HasPrefix(sdkaws.ToString(out.Parameter.Value), "ami-") {
		return "", fmt.Errorf("aws up: AMI parameter %s: no image ID in the answer", AMIParameter(arch))
	}
	return sdkaws.ToString(out.Parameter.Value), nil
}

// keyPair imports the configured public key or creates a key pair whose
// private key is written to dir. It returns the private key file.
func (p *Provider) keyPair(ctx context.Context, name, dir string, tags []types.TagSpecification) (string, error) {
	if p.cfg.PublicKeyFile != "" {
		pub, err := os.ReadFile(p.cfg.PublicKeyFile)
		if err != nil {
			return "", fmt.Errorf("aws up: public key: %w", err)
		}
		if _, err := p.ec2.ImportKeyPair(ctx, &ec2.ImportKeyPairInput{
			KeyName: sdkaws.String(name), PublicKeyMaterial: pub, TagSpecifications: tags,
		}); err != nil {
			return "", fmt.Errorf("aws up: import key pair %s: %w", name, err)
		}
		return p.cfg.PrivateKeyFile, nil
	}
	out, err := p.ec2.CreateKeyPair(ctx, &ec2.CreateKeyPairInput{
		KeyName: sdkaws.String(name), KeyType: types.KeyTypeEd25519, TagSpecifications: tags,
	})
	if err != nil {
		return "", fmt.Errorf("aws up: create key pair %s: %w", name, err)
	}
	file := filepath.Join(dir, name+".pem")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("aws up: keep private key: %w", err)
	}
	if err := os.WriteFile(file, []byte(sdkaws.ToString(out.KeyMaterial)), 0o600); err != nil {
		return "", fmt.Errorf("aws up: keep private key: %w", err)
	}
	return file, nil
}

func (p *Provider) waitPlacementGroup(ctx context.Context, name string) error {
	deadline := time.Now().Add(p.cfg.RunningTimeout)
	for {
		out, err := p.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{name}})
		if err != nil {
			return fmt.Errorf("aws up: describe placement group %s: %w", name, err)
		}
		if len(out.PlacementGroups) == 1 && out.PlacementGroups[0].State == types.PlacementGroupStateAvailable {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("aws up: placement group %s not available after %v", name, p.cfg.RunningTimeout)
		}
		if err := sleep(ctx, p.cfg.Poll); err != nil {
			return fmt.Errorf("aws up: wait for placement group %s: %w", name, err)
		}
	}
}

// UserData starts Docker (the study ran servers in containers) and arms
// the dead-man shutdown: with shutdown behaviour "terminate", a halt ends
// the instance for good.
func UserData(deadMan time.Duration) string {
	mins := int(deadMan / time.Minute)
	return fmt.Sprintf(`#!/bin/bash
# linerate: a forgotten pair stops by itself.
shutdown -h +%d "linerate dead-man shutdown"
dnf install -y docker
systemctl enable --now docker
usermod -aG docker ec2-user
`, mins)
}

// launch starts both instances in one call, zone by zone until one has
// capacity for the pair.
func (p *Provider) launch(ctx context.Context, name, ami, sgID string, spec func(types.ResourceType) []types.TagSpecification) ([]Instance, error) {
	zones := p.cfg.Zones
	if len(zones) == 0 {
		out, err := p.ec2.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
		if err != nil {
			return nil, fmt.Errorf("aws up: list zones: %w", err)
		}
		for _, z := range out.AvailabilityZones {
			if z.State == types.AvailabilityZoneStateAvailable && (z.ZoneType == nil || *z.ZoneType == "availability-zone") {
				zones = append(zones, sdkaws.ToString(z.ZoneName))
			}
		}
		sort.Strings(zones)
	}
	if len(zones) == 0 {
		return nil, fmt.Errorf("aws up: no available zone in %s", p.cfg.Region)
	}
	tagSpecs := append(spec(types.ResourceTypeInstance), spec(types.ResourceTypeVolume)...)
	var tried []string
	for _, z := range zones {
		token := make([]byte, 8)
		rand.Read(token)
		out, err := p.ec2.RunInstances(ctx, &ec2.RunInstancesInput{
			ImageId: sdkaws.String(ami), InstanceType: types.InstanceType(p.cfg.InstanceType),
			MinCount: sdkaws.Int32(2), MaxCount: sdkaws.Int32(2),
			KeyName:                           sdkaws.String(name),
			SecurityGroupIds:                  []string{sgID},
			Placement:                         &types.Placement{AvailabilityZone: sdkaws.String(z), GroupName: sdkaws.String(name)},
			UserData:                          sdkaws.String(base64.StdEncoding.EncodeToString([]byte(UserData(p.cfg.DeadMan)))),
			InstanceInitiatedShutdownBehavior: types.ShutdownBehaviorTerminate,
			TagSpecifications:                 tagSpecs,
			ClientToken:                       sdkaws.String(name + "-" + hex.EncodeToString(token)),
		})
		if code := errorCode(err); code == "InsufficientInstanceCapacity" || code == "Unsupported" {
			p.logf("aws: %s in %s: %s; trying the next zone", p.cfg.InstanceType, z, code)
			tried = append(tried, z+" ("+code+")")
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("aws up: run instances in %s: %w", z, err)
		}
		var insts []Instance
		for _, in := range out.Instances {
			insts = append(insts, Instance{ID: sdkaws.ToString(in.InstanceId), Zone: z, Index: sdkaws.ToInt32(in.AmiLaunchIndex)})
		}
		p.mu.Lock()
		p.instances = insts
		p.mu.Unlock()
		if len(insts) != 2 {
			return nil, fmt.Errorf("aws up: run instances in %s: got %d instances, want 2", z, len(insts))
		}
		p.logf("aws: launched %s and %s in %s", insts[0].ID, insts[1].ID, z)
		return insts, nil
	}
	return nil, fmt.Errorf("aws up: no zone had capacity for two %s: %s", p.cfg.InstanceType, strings.Join(tried, ", "))
}

// waitRunning polls until both instances run and have addresses.
func (p *Provider) waitRunning(ctx context.Context, insts []Instance) ([]Instance, error) {
	ids := make([]string, len(insts))
	for i, in := range insts {
		ids[i] = in.ID
	}
	deadline := time.Now().Add(p.cfg.RunningTimeout)
	for {
		out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
		if err != nil {
			return nil, fmt.Errorf("aws up: describe instances: %w", err)
		}
		var got []Instance
		var waiting []string
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				st := types.InstanceStateNamePending
				if in.State != nil {
					st = in.State.Name
				}
				switch st {
				case types.InstanceStateNameRunning:
				case types.InstanceStateNamePending:
					waiting = append(waiting, sdkaws.ToString(in.InstanceId))
					continue
				default:
					return nil, fmt.Errorf("aws up: instance %s went %s while starting", sdkaws.ToString(in.InstanceId), st)
				}
				pub, _ := netip.ParseAddr(sdkaws.ToString(in.PublicIpAddress))
				priv, _ := netip.ParseAddr(sdkaws.ToString(in.PrivateIpAddress))
				if !pub.IsValid() || !priv.IsValid() {
					waiting = append(waiting, sdkaws.ToString(in.InstanceId))
					continue
				}
				zone := ""
				if in.Placement != nil {
					zone = sdkaws.ToString(in.Placement.AvailabilityZone)
				}
				got = append(got, Instance{ID: sdkaws.ToString(in.InstanceId), Zone: zone, PublicIP: pub, PrivateIP: priv, Index: sdkaws.ToInt32(in.AmiLaunchIndex)})
			}
		}
		if len(got) == len(ids) {
			sort.Slice(got, func(i, j int) bool { return got[i].Index < got[j].Index })
			return got, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("aws up: instances %v not running after %v", waiting, p.cfg.RunningTimeout)
		}
		if err := sleep(ctx, p.cfg.Poll); err != nil {
			return nil, fmt.Errorf("aws up: wait for instances %v: %w", waiting, err)
		}
	}
}

func (p *Provider) sshConnect(ctx context.Context, in Instance, key, known string) (infra.Host, error) {
	role := "server"
	if in.Index != 0 {
		role = "client"
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
