package aws

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// The creates below may be sent twice: when an answer is lost on the way
// back, the SDK sends the request again, and EC2 then says the resource
// exists. Names carry the owner, so an existing one is this run's own.

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

// pemFile is where a created key pair's private half is kept.
func pemFile(dir, name string) string { return filepath.Join(dir, name+".pem") }

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
		}); err != nil && errorCode(err) != "InvalidKeyPair.Duplicate" {
			return "", fmt.Errorf("aws up: import key pair %s: %w", name, err)
		}
		return p.cfg.PrivateKeyFile, nil
	}
	create := func() (*ec2.CreateKeyPairOutput, error) {
		return p.ec2.CreateKeyPair(ctx, &ec2.CreateKeyPairInput{
			KeyName: sdkaws.String(name), KeyType: types.KeyTypeEd25519, TagSpecifications: tags,
		})
	}
	out, err := create()
	if errorCode(err) == "InvalidKeyPair.Duplicate" {
		// Made by the lost first answer, whose private key is gone with
		// it: make the pair again.
		if _, err := p.ec2.DeleteKeyPair(ctx, &ec2.DeleteKeyPairInput{KeyName: sdkaws.String(name)}); err != nil {
			return "", fmt.Errorf("aws up: replace key pair %s whose private key was lost: %w", name, err)
		}
		out, err = create()
	}
	if err != nil {
		return "", fmt.Errorf("aws up: create key pair %s: %w", name, err)
	}
	file := pemFile(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("aws up: keep private key: %w", err)
	}
	if err := os.WriteFile(file, []byte(sdkaws.ToString(out.KeyMaterial)), 0o600); err != nil {
		return "", fmt.Errorf("aws up: keep private key: %w", err)
	}
	return file, nil
}

// placementGroup creates the cluster placement group and waits until it
// is available.
func (p *Provider) placementGroup(ctx context.Context, name string, tags []types.TagSpecification) error {
	if _, err := p.ec2.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{
		GroupName: sdkaws.String(name), Strategy: types.PlacementStrategyCluster, TagSpecifications: tags,
	}); err != nil && errorCode(err) != "InvalidPlacementGroup.Duplicate" {
		return fmt.Errorf("aws up: create placement group %s: %w", name, err)
	}
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

// securityGroup creates the group admitting SSH from SSHFrom only, plus
// all traffic from the group itself (the data plane), and returns its ID.
func (p *Provider) securityGroup(ctx context.Context, name, campaign, owner string, tags []types.TagSpecification) (string, error) {
	var id string
	sg, err := p.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName:         sdkaws.String(name),
		Description:       sdkaws.String(groupDescription(campaign)),
		TagSpecifications: tags,
	})
	switch {
	case errorCode(err) == "InvalidGroup.Duplicate":
		if id, err = p.ownGroupID(ctx, name, owner); err != nil {
			return "", fmt.Errorf("aws up: security group %s: %w", name, err)
		}
	case err != nil:
		return "", fmt.Errorf("aws up: create security group %s: %w", name, err)
	default:
		id = sdkaws.ToString(sg.GroupId)
	}
	if _, err := p.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{
		GroupId: sdkaws.String(id), IpPermissions: p.ingress(id),
	}); err != nil && errorCode(err) != "InvalidPermission.Duplicate" {
		return "", fmt.Errorf("aws up: authorize %s: %w", id, err)
	}
	return id, nil
}

// groupDescription is the security group's description.
func groupDescription(campaign string) string {
	return "linerate campaign " + campaign + ": SSH from the operator, all traffic within the group"
}

// ingress are the rules of security group id: SSH from SSHFrom, all
// traffic from the group itself.
func (p *Provider) ingress(id string) []types.IpPermission {
	ssh := types.IpPermission{IpProtocol: sdkaws.String("tcp"), FromPort: sdkaws.Int32(22), ToPort: sdkaws.Int32(22)}
	from, desc := p.cfg.SSHFrom.Masked().String(), sdkaws.String("linerate operator")
	if p.cfg.SSHFrom.Addr().Is4() {
		ssh.IpRanges = []types.IpRange{{CidrIp: sdkaws.String(from), Description: desc}}
	} else {
		ssh.Ipv6Ranges = []types.Ipv6Range{{CidrIpv6: sdkaws.String(from), Description: desc}}
	}
	return []types.IpPermission{ssh,
		{IpProtocol: sdkaws.String("-1"), UserIdGroupPairs: []types.UserIdGroupPair{{GroupId: sdkaws.String(id)}}},
	}
}

// ownGroupID finds this owner's security group called name.
func (p *Provider) ownGroupID(ctx context.Context, name, owner string) (string, error) {
	out, err := p.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: selectorFilters(Selector{Owner: owner})})
	if err != nil {
		return "", err
	}
	for _, g := range out.SecurityGroups {
		if sdkaws.ToString(g.GroupName) == name {
			return sdkaws.ToString(g.GroupId), nil
		}
	}
	return "", fmt.Errorf("EC2 says it exists, but no group of owner %s has that name", owner)
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
// capacity for the pair. The client token makes a resent request (after a
// lost answer) the same launch.
func (p *Provider) launch(ctx context.Context, name, ami, sgID string, spec func(types.ResourceType) []types.TagSpecification, count int) ([]Instance, error) {
	p.mu.Lock()
	zones := p.zones
	p.mu.Unlock()
	if zones == nil {
		zones = p.cfg.Zones
	}
	if len(zones) == 0 {
		var err error
		if zones, err = p.regionZones(ctx); err != nil {
			return nil, fmt.Errorf("aws up: list zones: %w", err)
		}
	}
	zones = p.offeredOnly(ctx, zones)
	if len(zones) == 0 {
		return nil, fmt.Errorf("aws up: no available zone in %s offers %s", p.cfg.Region, p.cfg.InstanceType)
	}
	var tried []string
	group := name
	for i, z := range zones {
		if i > 0 {
			// A cluster group keeps its instances in one zone: the next
			// zone gets a group of its own (Down removes every group of
			// the owner).
			group = name + "-" + z
			p.logf("aws: a placement group %s in %s", group, z)
			if err := p.placementGroup(ctx, group, spec(types.ResourceTypePlacementGroup)); err != nil {
				return nil, err
			}
		}
		in := p.runInput(name, ami, sgID, z, spec, count)
		in.Placement.GroupName = sdkaws.String(group)
		token := make([]byte, 8)
		rand.Read(token)
		in.ClientToken = sdkaws.String(hex.EncodeToString(token))
		out, err := p.ec2.RunInstances(ctx, in)
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
		if len(insts) != count {
			return nil, fmt.Errorf("aws up: run instances in %s: got %d instances, want %d", z, len(insts), count)
		}
		sort.Slice(insts, func(i, j int) bool { return insts[i].Index < insts[j].Index })
		ids := make([]string, len(insts))
		for i, in := range insts {
			ids[i] = in.ID
		}
		p.logf("aws: launched %s in %s", strings.Join(ids, ", "), z)
		return insts, nil
	}
	return nil, fmt.Errorf("aws up: no zone had capacity for %d × %s: %s", count, p.cfg.InstanceType, strings.Join(tried, ", "))
}

// offeredOnly are the zones among zones that offer the instance type, in
// their order: the preflight's finding when it ran on this provider,
// else EC2's offerings asked now (all of zones when that fails: a zone
// that does not offer the type then answers Unsupported).
func (p *Provider) offeredOnly(ctx context.Context, zones []string) []string {
	p.mu.Lock()
	checked := p.zones != nil
	p.mu.Unlock()
	if checked {
		return zones
	}
	offered, err := p.offeredZones(ctx, p.cfg.InstanceType)
	if err != nil {
		p.logf("aws: where %s is offered: %v (every zone is tried)", p.cfg.InstanceType, err)
		return zones
	}
	var out []string
	for _, z := range zones {
		if offered[z] {
			out = append(out, z)
		} else {
			p.logf("aws: %s is not offered in %s; skipped", p.cfg.InstanceType, z)
		}
	}
	return out
}

// offeredZones are the zones of the region that offer the instance type.
func (a *Account) offeredZones(ctx context.Context, instanceType string) (map[string]bool, error) {
	offered := map[string]bool{}
	in := &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: types.LocationTypeAvailabilityZone,
		Filters:      []types.Filter{{Name: sdkaws.String("instance-type"), Values: []string{instanceType}}},
	}
	for pg := ec2.NewDescribeInstanceTypeOfferingsPaginator(a.ec2, in); pg.HasMorePages(); {
		out, err := pg.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range out.InstanceTypeOfferings {
			offered[sdkaws.ToString(o.Location)] = true
		}
	}
	return offered, nil
}

// runInput is the launch of count instances in zone.
func (p *Provider) runInput(name, ami, sgID, zone string, spec func(types.ResourceType) []types.TagSpecification, count int) *ec2.RunInstancesInput {
	return &ec2.RunInstancesInput{
		ImageId: sdkaws.String(ami), InstanceType: types.InstanceType(p.cfg.InstanceType),
		MinCount: sdkaws.Int32(int32(count)), MaxCount: sdkaws.Int32(int32(count)),
		KeyName:                           sdkaws.String(name),
		SecurityGroupIds:                  []string{sgID},
		Placement:                         &types.Placement{AvailabilityZone: sdkaws.String(zone), GroupName: sdkaws.String(name)},
		UserData:                          sdkaws.String(base64.StdEncoding.EncodeToString([]byte(UserData(p.cfg.DeadMan)))),
		InstanceInitiatedShutdownBehavior: types.ShutdownBehaviorTerminate,
		TagSpecifications:                 append(spec(types.ResourceTypeInstance), spec(types.ResourceTypeVolume)...),
	}
}

// waitRunning polls until both instances run and have addresses. Right
// after the launch EC2 may not know the IDs yet: that counts as pending
// for up to NotFoundTimeout.
func (p *Provider) waitRunning(ctx context.Context, insts []Instance) ([]Instance, error) {
	ids := make([]string, len(insts))
	for i, in := range insts {
		ids[i] = in.ID
	}
	start := time.Now()
	deadline := start.Add(p.cfg.RunningTimeout)
	for {
		found, unknown, err := p.describeInstances(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("aws up: describe instances: %w", err)
		}
		if len(unknown) > 0 && time.Since(start) > p.cfg.NotFoundTimeout {
			return nil, fmt.Errorf("aws up: instances %v still unknown to EC2 %v after their launch", unknown, p.cfg.NotFoundTimeout)
		}
		var got []Instance
		waiting := unknown
		for _, in := range found {
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
