package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// The preflight: before anything is created, everything the provider
// will ask of EC2 is asked with DryRun set, and the instance type, its
// image, its zones and the account's vCPU quota are checked, so a first
// run fails in seconds and for free rather than after a launch.

// Quotas is the part of the Service Quotas API the preflight uses.
type Quotas interface {
	GetServiceQuota(context.Context, *servicequotas.GetServiceQuotaInput, ...func(*servicequotas.Options)) (*servicequotas.GetServiceQuotaOutput, error)
}

// STS is the part of the STS API the preflight uses: reading the encoded
// message of an UnauthorizedOperation.
type STS interface {
	DecodeAuthorizationMessage(context.Context, *sts.DecodeAuthorizationMessageInput, ...func(*sts.Options)) (*sts.DecodeAuthorizationMessageOutput, error)
}

// CheckClients builds the Service Quotas and STS clients for a.
func CheckClients(ctx context.Context, a Access) (Quotas, STS, error) {
	cfg, err := loadConfig(ctx, a, a.Region)
	if err != nil {
		return nil, nil, err
	}
	return servicequotas.NewFromConfig(cfg), sts.NewFromConfig(cfg), nil
}

// Status is a check's outcome.
type Status string

const (
	Pass    Status = "pass"
	Fail    Status = "FAIL"
	Unknown Status = "could not check"
)

// Check is one line of the preflight's table.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Why    string `json:"why"`
	// Encoded is an UnauthorizedOperation's encoded message that could
	// not be decoded here (sts:DecodeAuthorizationMessage not allowed).
	Encoded string `json:"encoded,omitempty"`
}

// Report is what the preflight found: its checks in order, and what it
// learnt of the instance type.
type Report struct {
	Checks []Check `json:"checks"`
	// Network is the type's network performance as EC2 states it
	// ("200 Gigabit"); "" when it could not be asked.
	Network string `json:"network,omitempty"`
	// Zones are the zones the pair may launch in, in the order tried:
	// the campaign's (or the region's) where the type is offered.
	Zones []string `json:"zones,omitempty"`
}

func (r *Report) add(name string, st Status, format string, args ...any) *Check {
	r.Checks = append(r.Checks, Check{Name: name, Status: st, Why: fmt.Sprintf(format, args...)})
	return &r.Checks[len(r.Checks)-1]
}

// Failed are the checks that failed.
func (r *Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Status == Fail {
			out = append(out, c)
		}
	}
	return out
}

// WriteText writes the table, a check a line, then the encoded messages
// nobody could decode here.
func (r *Report) WriteText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "check\tresult\twhy")
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, c.Status, c.Why)
	}
	tw.Flush()
	for _, c := range r.Checks {
		if c.Encoded != "" {
			fmt.Fprintf(w, "%s: encoded message (aws sts decode-authorization-message --encoded-message …):\n%s\n", c.Name, c.Encoded)
		}
	}
}

// PreflightError is a preflight with a failed check: nothing was
// created.
type PreflightError struct{ Failed []Check }

func (e *PreflightError) Error() string {
	c := e.Failed[0]
	msg := "aws preflight: " + c.Name + ": " + c.Why
	if n := len(e.Failed) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more failed checks above)", n)
	}
	return msg
}

// Err is a *PreflightError when a check failed, else nil.
func (r *Report) Err() error {
	if f := r.Failed(); len(f) > 0 {
		return &PreflightError{Failed: f}
	}
	return nil
}

// PreflightOptions are what the preflight needs beside the provider.
type PreflightOptions struct {
	// Campaign names the resources the dry runs name, as Up will.
	Campaign string
	// AllowSlowerLink passes a type whose stated network performance is
	// below Config.LinkGbps.
	AllowSlowerLink bool
	// Quotas and STS are the clients; nil ones are built from the
	// provider's access.
	Quotas Quotas
	STS    STS
}

// madeUp are IDs no resource has: the dry runs of calls that act on
// existing resources name them (a dry run asks only whether the call is
// allowed).
const (
	madeUpInstance = "i-0123456789abcdef0"
	madeUpGroup    = "sg-0123456789abcdef0"
	madeUpKey      = "key-0123456789abcdef0"
)

// Preflight checks, creating nothing, that Up can succeed: the type,
// its network and image, the zones that offer it, the vCPU quota, and
// every EC2 call of up, down and gc as a dry run. The zones it finds are
// the ones Up then tries.
func (p *Provider) Preflight(ctx context.Context, opt PreflightOptions) *Report {
	r := &Report{}
	if opt.Quotas == nil || opt.STS == nil {
		q, s, err := CheckClients(ctx, p.cfg.Access)
		if err != nil {
			r.add("clients", Fail, "%v", err)
			return r
		}
		opt.Quotas, opt.STS = q, s
	}
	pf := &preflight{p: p, r: r, sts: opt.STS}
	it, reached := pf.instanceType(ctx, opt.AllowSlowerLink)
	if !reached {
		return r
	}
	pf.zones(ctx)
	ami := pf.image(ctx, it)
	pf.quota(ctx, it, opt.Quotas)
	pf.dryRuns(ctx, opt.Campaign, ami)
	p.mu.Lock()
	p.zones = r.Zones
	p.mu.Unlock()
	return r
}

type preflight struct {
	p   *Provider
	r   *Report
	sts STS
}

// typeInfo is what the preflight learnt of the instance type; arch ""
// when it could not.
type typeInfo struct {
	arch  string
	vcpus int
}

// instanceType checks the type; reached is false when EC2 could not be
// reached at all (nothing else is then asked).
func (pf *preflight) instanceType(ctx context.Context, allowSlower bool) (_ typeInfo, reached bool) {
	cfg := pf.p.cfg
	name := "instance type " + cfg.InstanceType
	out, err := pf.p.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{types.InstanceType(cfg.InstanceType)},
	})
	if err != nil && errorCode(err) == "" && ctx.Err() == nil {
		pf.r.add("reach EC2", Fail, "%v", err)
		return typeInfo{}, false
	}
	if err != nil {
		pf.apiFailure(ctx, name, "ec2:DescribeInstanceTypes", err)
		pf.r.add("ENA", Unknown, "the instance type is unknown")
		pf.r.add("network performance", Unknown, "the instance type is unknown")
		return typeInfo{}, true
	}
	if len(out.InstanceTypes) != 1 || out.InstanceTypes[0].ProcessorInfo == nil {
		pf.r.add(name, Fail, "EC2 does not know it in %s", cfg.Region)
		return typeInfo{}, true
	}
	t := out.InstanceTypes[0]
	var info typeInfo
	for _, a := range t.ProcessorInfo.SupportedArchitectures {
		if a == types.ArchitectureTypeArm64 || a == types.ArchitectureTypeX8664 {
			info.arch = string(a)
		}
	}
	if t.VCpuInfo != nil {
		info.vcpus = int(sdkaws.ToInt32(t.VCpuInfo.DefaultVCpus))
	}
	if info.arch == "" {
		pf.r.add(name, Fail, "architectures %v; linerate runs on arm64 and x86_64", t.ProcessorInfo.SupportedArchitectures)
	} else {
		pf.r.add(name, Pass, "%s, %d vCPUs", info.arch, info.vcpus)
	}
	var ena types.EnaSupport
	var perf string
	if t.NetworkInfo != nil {
		ena, perf = t.NetworkInfo.EnaSupport, sdkaws.ToString(t.NetworkInfo.NetworkPerformance)
	}
	switch ena {
	case types.EnaSupportRequired, types.EnaSupportSupported:
		pf.r.add("ENA", Pass, "%s", ena)
	case types.EnaSupportUnsupported:
		pf.r.add("ENA", Fail, "%s has no ENA: its network is not the one linerate measures", cfg.InstanceType)
	default:
		pf.r.add("ENA", Unknown, "EC2 did not say")
	}
	pf.r.Network = perf
	pf.network(perf, allowSlower)
	return info, true
}

// gbit reads the figure of a network performance as EC2 states it:
// "200 Gigabit", "Up to 12.5 Gigabit", "50 Gigabit" (the most the type
// may get; "Up to" is a burst).
var gbit = regexp.MustCompile(`(?i)([0-9]+(?:\.[0-9]+)?)\s*Gigabit`)

// StatedGbps is the figure of a stated network performance, 0 when it
// has none ("Moderate", "High").
func StatedGbps(perf string) float64 {
	m := gbit.FindStringSubmatch(perf)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func (pf *preflight) network(perf string, allowSlower bool) {
	want := pf.p.cfg.LinkGbps
	stated := StatedGbps(perf)
	switch {
	case perf == "":
		pf.r.add("network performance", Unknown, "EC2 did not state it")
	case want == 0:
		pf.r.add("network performance", Pass, "%s (the campaign states no link-gbps)", perf)
	case stated == 0:
		pf.r.add("network performance", Unknown, "%q has no figure to hold link-gbps %g against", perf, want)
	case stated < want && allowSlower:
		pf.r.add("network performance", Pass, "%s, below the campaign's link-gbps %g (allowed: --allow-slower-link)", perf, want)
	case stated < want:
		pf.r.add("network performance", Fail, "%s states %s, below the campaign's link-gbps %g; pick a faster type, lower link-gbps, or pass --allow-slower-link",
			pf.p.cfg.InstanceType, perf, want)
	default:
		pf.r.add("network performance", Pass, "%s, at least the campaign's link-gbps %g", perf, want)
	}
}

// zones finds the zones to try: the campaign's, or the region's, where
// the type is offered.
func (pf *preflight) zones(ctx context.Context) {
	cfg := pf.p.cfg
	const name = "zones"
	want := cfg.Zones
	if len(want) == 0 {
		all, err := pf.p.regionZones(ctx)
		if err != nil {
			pf.apiFailure(ctx, name, "ec2:DescribeAvailabilityZones", err)
			return
		}
		want = all
	}
	offered, err := pf.p.offeredZones(ctx, cfg.InstanceType)
	if err != nil {
		pf.apiFailure(ctx, name, "ec2:DescribeInstanceTypeOfferings", err)
		return
	}
	var yes, no []string
	for _, z := range want {
		if offered[z] {
			yes = append(yes, z)
		} else {
			no = append(no, z)
		}
	}
	pf.r.Zones = yes
	switch {
	case len(yes) == 0:
		pf.r.add(name, Fail, "%s is not offered in %s (offered in: %s)", cfg.InstanceType, strings.Join(want, ", "), listOrNone(sortedKeys(offered)))
	case len(no) > 0:
		pf.r.add(name, Pass, "offered in %s; not in %s (skipped)", strings.Join(yes, ", "), strings.Join(no, ", "))
	default:
		pf.r.add(name, Pass, "offered in %s", strings.Join(yes, ", "))
	}
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// regionZones are the region's available zones, sorted.
func (a *Account) regionZones(ctx context.Context) ([]string, error) {
	out, err := a.ec2.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		return nil, err
	}
	var zones []string
	for _, z := range out.AvailabilityZones {
		if z.State == types.AvailabilityZoneStateAvailable && (z.ZoneType == nil || *z.ZoneType == "availability-zone") {
			zones = append(zones, sdkaws.ToString(z.ZoneName))
		}
	}
	sort.Strings(zones)
	return zones, nil
}

// image checks the image Up would launch has the type's architecture;
// it returns its ID ("" when unknown).
func (pf *preflight) image(ctx context.Context, it typeInfo) string {
	const name = "image"
	if it.arch == "" {
		pf.r.add(name, Unknown, "the instance type's architecture is unknown")
		return ""
	}
	ami, err := pf.p.ami(ctx, it.arch)
	if err != nil {
		pf.apiFailure(ctx, name, "ssm:GetParameter", err)
		return ""
	}
	out, err := pf.p.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{ami}})
	if err != nil {
		pf.apiFailure(ctx, name, "ec2:DescribeImages", err)
		return ami
	}
	if len(out.Images) != 1 {
		pf.r.add(name, Fail, "%s (from %s) is not an image EC2 knows", ami, AMIParameter(it.arch))
		return ami
	}
	if arch := string(out.Images[0].Architecture); arch != it.arch {
		pf.r.add(name, Fail, "%s is %s, but %s is %s", ami, arch, pf.p.cfg.InstanceType, it.arch)
		return ami
	}
	pf.r.add(name, Pass, "%s (%s, from %s)", ami, it.arch, AMIParameter(it.arch))
	return ami
}

// vcpuQuota is the On-Demand vCPU quota of the standard families, the
// one linerate knows the code of.
const vcpuQuota = "L-1216C47A"

// standardFamilies are the letters of the instance families that count
// against vcpuQuota (A, C, D, H, I, M, R, T, Z; im and is are I).
var standardFamilies = map[string]bool{"a": true, "c": true, "d": true, "h": true, "i": true, "im": true, "is": true, "m": true, "r": true, "t": true, "z": true}

// familyLetters are the letters an instance type's family starts with:
// "c" of c8gn.16xlarge, "inf" of inf2.xlarge.
func familyLetters(instanceType string) string {
	i := strings.IndexFunc(instanceType, func(r rune) bool { return r < 'a' || r > 'z' })
	if i < 0 {
		return instanceType
	}
	return instanceType[:i]
}

// QuotaConsole is the Service Quotas console page of an EC2 quota.
func QuotaConsole(region, code string) string {
	return fmt.Sprintf("https://%s.console.aws.amazon.com/servicequotas/home/services/ec2/quotas/%s", region, code)
}

func (pf *preflight) quota(ctx context.Context, it typeInfo, q Quotas) {
	cfg := pf.p.cfg
	const name = "vCPU quota"
	fam := familyLetters(cfg.InstanceType)
	if !standardFamilies[fam] {
		pf.r.add(name, Unknown, "linerate knows the quota code of the standard families only (%s); find %s's \"Running On-Demand … instances\" quota at https://%s.console.aws.amazon.com/servicequotas/home/services/ec2/quotas",
			vcpuQuota, cfg.InstanceType, cfg.Region)
		return
	}
	if it.vcpus == 0 {
		pf.r.add(name, Unknown, "the instance type's vCPUs are unknown")
		return
	}
	out, err := q.GetServiceQuota(ctx, &servicequotas.GetServiceQuotaInput{ServiceCode: sdkaws.String("ec2"), QuotaCode: sdkaws.String(vcpuQuota)})
	if err != nil || out.Quota == nil || out.Quota.Value == nil {
		if err == nil {
			err = errors.New("no value in the answer")
		}
		pf.apiFailure(ctx, name, "servicequotas:GetServiceQuota", err)
		return
	}
	limit := int(*out.Quota.Value)
	running, err := pf.runningVCPUs(ctx)
	if err != nil {
		pf.apiFailure(ctx, name, "ec2:DescribeInstances", err)
		return
	}
	n := cfg.InstanceCount()
	need := n * it.vcpus
	if left := limit - running; need > left {
		pf.r.add(name, Fail, "the On-Demand vCPU quota %s in %s is %d, %d already running: %d left, and the pair needs %d × %d = %d; raise it to at least %d at %s",
			vcpuQuota, cfg.Region, limit, running, max(left, 0), n, it.vcpus, need, running+need, QuotaConsole(cfg.Region, vcpuQuota))
		return
	}
	pf.r.add(name, Pass, "%s: %d of %d left (%d running), the pair needs %d × %d = %d", vcpuQuota, limit-running, limit, running, n, it.vcpus, need)
}

// runningVCPUs sums the vCPUs of the region's pending and running
// instances of the standard families.
func (pf *preflight) runningVCPUs(ctx context.Context) (int, error) {
	byType := map[string]int{}
	in := &ec2.DescribeInstancesInput{Filters: []types.Filter{{Name: sdkaws.String("instance-state-name"), Values: []string{"pending", "running"}}}}
	for pg := ec2.NewDescribeInstancesPaginator(pf.p.ec2, in); pg.HasMorePages(); {
		out, err := pg.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		for _, res := range out.Reservations {
			for _, i := range res.Instances {
				if t := string(i.InstanceType); standardFamilies[familyLetters(t)] {
					byType[t]++
				}
			}
		}
	}
	if len(byType) == 0 {
		return 0, nil
	}
	var names []types.InstanceType
	for t := range byType {
		names = append(names, types.InstanceType(t))
	}
	out, err := pf.p.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: names})
	if err != nil {
		return 0, err
	}
	sum := 0
	for _, t := range out.InstanceTypes {
		if t.VCpuInfo != nil {
			sum += byType[string(t.InstanceType)] * int(sdkaws.ToInt32(t.VCpuInfo.DefaultVCpus))
		}
	}
	return sum, nil
}

// dryRun is one EC2 call sent with DryRun set.
type dryRun struct {
	action string // the IAM action
	call   func(context.Context) error
	note   *string // set by call: what the pass did not ask
}

// dryRuns sends every EC2 call up, down and gc make, with DryRun set and
// the parameters they will have (what exists only once up made it is
// named by made-up IDs).
func (pf *preflight) dryRuns(ctx context.Context, campaign, ami string) {
	now := time.Now().UTC()
	runs := pf.createRuns(campaign, now)
	if launch, ok := pf.launchRun(campaign, ami, now); ok {
		runs = append(runs, launch)
	} else {
		pf.r.add("ec2:RunInstances", Unknown, "no image or zone to ask with (see above)")
	}
	runs = append(runs, pf.downRuns(campaign, now)...)
	for _, d := range runs {
		err := d.call(ctx)
		pf.dryRunResult(ctx, d.action, err)
		if d.note != nil && *d.note != "" && errorCode(err) == "DryRunOperation" {
			pf.r.Checks[len(pf.r.Checks)-1].Why += *d.note
		}
	}
}

// createRuns are the calls up makes before the launch: the placement
// group, the security group and its rule, the key pair.
func (pf *preflight) createRuns(campaign string, now time.Time) []dryRun {
	p, cfg := pf.p, pf.p.cfg
	name := resourceName(campaign, p.Owner())
	spec := p.tagSpecs(campaign, p.Owner(), now)
	dry := sdkaws.Bool(true)
	runs := []dryRun{
		{action: "ec2:CreatePlacementGroup", call: func(ctx context.Context) error {
			_, err := p.ec2.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{DryRun: dry,
				GroupName: sdkaws.String(name), Strategy: types.PlacementStrategyCluster, TagSpecifications: spec(types.ResourceTypePlacementGroup)})
			return err
		}},
		{action: "ec2:CreateSecurityGroup", call: func(ctx context.Context) error {
			_, err := p.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{DryRun: dry,
				GroupName: sdkaws.String(name), Description: sdkaws.String(groupDescription(campaign)), TagSpecifications: spec(types.ResourceTypeSecurityGroup)})
			return err
		}},
		{action: "ec2:AuthorizeSecurityGroupIngress", call: func(ctx context.Context) error {
			_, err := p.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{DryRun: dry,
				GroupId: sdkaws.String(madeUpGroup), IpPermissions: p.ingress(madeUpGroup)})
			return err
		}},
	}
	if cfg.PublicKeyFile != "" {
		runs = append(runs, dryRun{action: "ec2:ImportKeyPair", call: func(ctx context.Context) error {
			pub, err := os.ReadFile(cfg.PublicKeyFile)
			if err != nil {
				return fmt.Errorf("public key: %w", err)
			}
			_, err = p.ec2.ImportKeyPair(ctx, &ec2.ImportKeyPairInput{DryRun: dry, KeyName: sdkaws.String(name),
				PublicKeyMaterial: pub, TagSpecifications: spec(types.ResourceTypeKeyPair)})
			return err
		}})
	} else {
		runs = append(runs, dryRun{action: "ec2:CreateKeyPair", call: func(ctx context.Context) error {
			_, err := p.ec2.CreateKeyPair(ctx, &ec2.CreateKeyPairInput{DryRun: dry, KeyName: sdkaws.String(name),
				KeyType: types.KeyTypeEd25519, TagSpecifications: spec(types.ResourceTypeKeyPair)})
			return err
		}})
	}
	return runs
}

// launchRun is up's RunInstances, when there is an image and a zone to
// ask with.
func (pf *preflight) launchRun(campaign, ami string, now time.Time) (dryRun, bool) {
	p, cfg := pf.p, pf.p.cfg
	name := resourceName(campaign, p.Owner())
	spec := p.tagSpecs(campaign, p.Owner(), now)
	dry := sdkaws.Bool(true)
	zone := firstOr(pf.r.Zones, "")
	if ami == "" || zone == "" {
		return dryRun{}, false
	}
	var note string
	return dryRun{action: "ec2:RunInstances", note: &note, call: func(ctx context.Context) error {
		in := p.runInput(name, ami, madeUpGroup, zone, spec, cfg.InstanceCount())
		in.DryRun = dry
		_, err := p.ec2.RunInstances(ctx, in)
		if code := errorCode(err); notFoundCodes[code] {
			// The group, key and security group are up's to create
			// first: asked again without them, the launch itself is.
			in.KeyName, in.SecurityGroupIds, in.Placement.GroupName = nil, nil, nil
			_, err = p.ec2.RunInstances(ctx, in)
			note = fmt.Sprintf("; asked without the placement group, key pair and security group, which up creates first (%s)", code)
		}
		return err
	}}, true
}

// downRuns are the calls the lease, down and gc make.
func (pf *preflight) downRuns(campaign string, now time.Time) []dryRun {
	p := pf.p
	name := resourceName(campaign, p.Owner())
	dry := sdkaws.Bool(true)
	return []dryRun{
		dryRun{action: "ec2:CreateTags", call: func(ctx context.Context) error {
			_, err := p.ec2.CreateTags(ctx, &ec2.CreateTagsInput{DryRun: dry, Resources: []string{madeUpInstance},
				Tags: []types.Tag{{Key: sdkaws.String(TagLease), Value: sdkaws.String(now.Format(time.RFC3339))}}})
			return err
		}},
		dryRun{action: "ec2:TerminateInstances", call: func(ctx context.Context) error {
			_, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{DryRun: dry, InstanceIds: []string{madeUpInstance}})
			return err
		}},
		dryRun{action: "ec2:DeletePlacementGroup", call: func(ctx context.Context) error {
			_, err := p.ec2.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{DryRun: dry, GroupName: sdkaws.String(name)})
			return err
		}},
		dryRun{action: "ec2:DeleteSecurityGroup", call: func(ctx context.Context) error {
			_, err := p.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{DryRun: dry, GroupId: sdkaws.String(madeUpGroup)})
			return err
		}},
		dryRun{action: "ec2:DeleteKeyPair", call: func(ctx context.Context) error {
			_, err := p.ec2.DeleteKeyPair(ctx, &ec2.DeleteKeyPairInput{DryRun: dry, KeyPairId: sdkaws.String(madeUpKey)})
			return err
		}},
		dryRun{action: "ec2:DescribeSecurityGroups", call: func(ctx context.Context) error {
			_, err := p.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{DryRun: dry})
			return err
		}},
		dryRun{action: "ec2:DescribePlacementGroups", call: func(ctx context.Context) error {
			_, err := p.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{DryRun: dry})
			return err
		}},
		dryRun{action: "ec2:DescribeKeyPairs", call: func(ctx context.Context) error {
			_, err := p.ec2.DescribeKeyPairs(ctx, &ec2.DescribeKeyPairsInput{DryRun: dry})
			return err
		}},
	}
}

func firstOr(s []string, def string) string {
	if len(s) == 0 {
		return def
	}
	return s[0]
}

// notFoundCodes are EC2's answers that a named resource does not exist:
// a dry run naming a made-up one may get them before the permission is
// checked.
var notFoundCodes = map[string]bool{
	"InvalidInstanceID.NotFound": true, "InvalidInstanceID.Malformed": true, "InvalidGroup.NotFound": true,
	"InvalidGroupId.Malformed": true, "InvalidPlacementGroup.Unknown": true, "InvalidKeyPair.NotFound": true,
	"InvalidKeyPair.Duplicate": true, "InvalidPlacementGroup.Duplicate": true, "InvalidGroup.Duplicate": true,
}

// dryRunResult reads a dry run's answer: DryRunOperation is allowed.
func (pf *preflight) dryRunResult(ctx context.Context, action string, err error) {
	code := errorCode(err)
	switch {
	case code == "DryRunOperation":
		pf.r.add(action, Pass, "allowed (dry run)")
	case err == nil:
		pf.r.add(action, Fail, "EC2 answered a dry run without DryRunOperation")
	case code == "UnauthorizedOperation":
		pf.denied(ctx, action, action, err)
	case notFoundCodes[code]:
		pf.r.add(action, Unknown, "EC2 checked the resource the dry run names before the permission (%s)", code)
	default:
		pf.r.add(action, Fail, "%v", apiMessage(err))
	}
}

// apiFailure records a call a check needed that failed: a denial names
// the missing permission.
func (pf *preflight) apiFailure(ctx context.Context, name, action string, err error) {
	switch code := errorCode(err); code {
	case "UnauthorizedOperation":
		pf.denied(ctx, name, action, err)
	case "AccessDeniedException", "AccessDenied":
		pf.r.add(name, Fail, "not allowed: %s (add it to the policy: linerate infra aws policy)", action)
	default:
		pf.r.add(name, Unknown, "%s: %v", action, apiMessage(err))
	}
}

// encodedMark precedes an UnauthorizedOperation's encoded message.
const encodedMark = "Encoded authorization failure message: "

// denied records check name's UnauthorizedOperation of action: the
// action and resource the message names, decoded with STS when that is
// allowed, else how to decode it.
func (pf *preflight) denied(ctx context.Context, name, action string, err error) {
	msg := apiMessage(err)
	i := strings.Index(msg, encodedMark)
	if i < 0 {
		pf.r.add(name, Fail, "not allowed: %s (%s)", action, msg)
		return
	}
	enc := strings.TrimSpace(msg[i+len(encodedMark):])
	out, derr := pf.sts.DecodeAuthorizationMessage(ctx, &sts.DecodeAuthorizationMessageInput{EncodedMessage: sdkaws.String(enc)})
	if derr == nil {
		var doc struct {
			Context struct{ Action, Resource string } `json:"context"`
		}
		if json.Unmarshal([]byte(sdkaws.ToString(out.DecodedMessage)), &doc) == nil && doc.Context.Action != "" {
			pf.r.add(name, Fail, "not allowed: %s on %s (add it to the policy: linerate infra aws policy)", doc.Context.Action, doc.Context.Resource)
			return
		}
	}
	c := pf.r.add(name, Fail, "not allowed: %s; the encoded message below says why (sts:DecodeAuthorizationMessage is not allowed here: decode it where it is, with aws sts decode-authorization-message)", action)
	c.Encoded = enc
}

// apiMessage is an API error's message alone, without the SDK's framing.
func apiMessage(err error) string {
	var ae interface{ ErrorMessage() string }
	if errors.As(err, &ae) && ae.ErrorMessage() != "" {
		return errorCode(err) + ": " + ae.ErrorMessage()
	}
	return err.Error()
}
