package aws

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// ForCampaign points Down at a campaign brought up by another process (the
// CLI's `infra down`, or cleanup after a crash).
func (p *Provider) ForCampaign(campaign string) *Provider {
	p.mu.Lock()
	p.campaign = campaign
	p.mu.Unlock()
	return p
}

// Resource is one thing linerate created in AWS.
type Resource struct {
	Kind     string    `json:"kind"` // instance, placement-group, security-group, key-pair
	ID       string    `json:"id"`
	Name     string    `json:"name,omitempty"`
	Campaign string    `json:"campaign"`
	State    string    `json:"state,omitempty"`
	Created  time.Time `json:"created,omitzero"`
	Deadline time.Time `json:"deadline,omitzero"`
}

func campaignFilter(campaign string) []types.Filter {
	if campaign == "" {
		return []types.Filter{{Name: sdkaws.String("tag-key"), Values: []string{TagCampaign}}}
	}
	return []types.Filter{{Name: sdkaws.String("tag:" + TagCampaign), Values: []string{campaign}}}
}

var liveStates = []string{"pending", "running", "shutting-down", "stopping", "stopped"}

func tagsOf(ts []types.Tag) (campaign string, created, deadline time.Time) {
	for _, t := range ts {
		switch sdkaws.ToString(t.Key) {
		case TagCampaign:
			campaign = sdkaws.ToString(t.Value)
		case TagCreated:
			created, _ = time.Parse(time.RFC3339, sdkaws.ToString(t.Value))
		case TagDeadline:
			deadline, _ = time.Parse(time.RFC3339, sdkaws.ToString(t.Value))
		}
	}
	return
}

// Resources lists what linerate created for campaign ("" for every
// campaign), instances that are not yet terminated included.
func (p *Provider) Resources(ctx context.Context, campaign string) ([]Resource, error) {
	var out []Resource
	var next *string
	for page := 0; page < 100; page++ {
		ins, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{
			Filters:   append(campaignFilter(campaign), types.Filter{Name: sdkaws.String("instance-state-name"), Values: liveStates}),
			NextToken: next,
		})
		if err != nil {
			return nil, fmt.Errorf("aws: list instances: %w", err)
		}
		for _, r := range ins.Reservations {
			for _, in := range r.Instances {
				c, cr, dl := tagsOf(in.Tags)
				st := ""
				if in.State != nil {
					st = string(in.State.Name)
				}
				out = append(out, Resource{Kind: "instance", ID: sdkaws.ToString(in.InstanceId), Campaign: c, State: st, Created: cr, Deadline: dl})
			}
		}
		if next = ins.NextToken; next == nil {
			break
		}
	}
	pgs, err := p.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{Filters: campaignFilter(campaign)})
	if err != nil {
		return nil, fmt.Errorf("aws: list placement groups: %w", err)
	}
	for _, g := range pgs.PlacementGroups {
		c, cr, dl := tagsOf(g.Tags)
		out = append(out, Resource{Kind: "placement-group", ID: sdkaws.ToString(g.GroupId), Name: sdkaws.ToString(g.GroupName), Campaign: c, State: string(g.State), Created: cr, Deadline: dl})
	}
	sgs, err := p.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: campaignFilter(campaign)})
	if err != nil {
		return nil, fmt.Errorf("aws: list security groups: %w", err)
	}
	for _, g := range sgs.SecurityGroups {
		c, cr, dl := tagsOf(g.Tags)
		out = append(out, Resource{Kind: "security-group", ID: sdkaws.ToString(g.GroupId), Name: sdkaws.ToString(g.GroupName), Campaign: c, Created: cr, Deadline: dl})
	}
	keys, err := p.ec2.DescribeKeyPairs(ctx, &ec2.DescribeKeyPairsInput{Filters: campaignFilter(campaign)})
	if err != nil {
		return nil, fmt.Errorf("aws: list key pairs: %w", err)
	}
	for _, k := range keys.KeyPairs {
		c, cr, dl := tagsOf(k.Tags)
		out = append(out, Resource{Kind: "key-pair", ID: sdkaws.ToString(k.KeyPairId), Name: sdkaws.ToString(k.KeyName), Campaign: c, Created: cr, Deadline: dl})
	}
	return out, nil
}

// Down terminates the campaign's instances, waits until they are gone,
// then deletes its placement group, security group and key pair, retrying
// while AWS says they are in use. Everything is found by the campaign tag
// (plus the instance IDs Up saw, in case a fresh tag is not listed yet).
func (p *Provider) Down(ctx context.Context) error {
	p.mu.Lock()
	campaign := p.campaign
	known := p.instances
	hosts := p.hosts
	p.hosts = nil
	p.mu.Unlock()
	for _, h := range hosts {
		h.Close()
	}
	if campaign == "" {
		return nil
	}
	if err := p.downCampaign(ctx, campaign, known); err != nil {
		return err
	}
	p.mu.Lock()
	p.instances = nil
	p.mu.Unlock()
	return nil
}

func (p *Provider) downCampaign(ctx context.Context, campaign string, known []Instance) error {
	res, err := p.Resources(ctx, campaign)
	if err != nil {
		return fmt.Errorf("aws down %s: %w", campaign, err)
	}
	ids := map[string]bool{}
	for _, in := range known {
		ids[in.ID] = true
	}
	for _, r := range res {
		if r.Kind == "instance" {
			ids[r.ID] = true
		}
	}
	if len(ids) > 0 {
		if err := p.terminate(ctx, sortedKeys(ids)); err != nil {
			return fmt.Errorf("aws down %s: %w", campaign, err)
		}
	}
	var errs []error
	for _, r := range res {
		var del func() error
		switch r.Kind {
		case "placement-group":
			del = func() error {
				_, err := p.ec2.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: sdkaws.String(r.Name)})
				return err
			}
		case "security-group":
			del = func() error {
				_, err := p.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: sdkaws.String(r.ID)})
				return err
			}
		case "key-pair":
			del = func() error {
				_, err := p.ec2.DeleteKeyPair(ctx, &ec2.DeleteKeyPairInput{KeyPairId: sdkaws.String(r.ID)})
				return err
			}
		default:
			continue
		}
		if err := p.deleteRetrying(ctx, r, del); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("aws down %s: %w", campaign, err)
	}
	p.logf("aws: campaign %s torn down (%d instances, %d other resources)", campaign, len(ids), len(res)-countKind(res, "instance"))
	return nil
}

func countKind(rs []Resource, kind string) int {
	n := 0
	for _, r := range rs {
		if r.Kind == kind {
			n++
		}
	}
	return n
}

func sortedKeys(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// terminate ends the instances and waits until EC2 reports them
// terminated (until then their security group is still in use).
func (p *Provider) terminate(ctx context.Context, ids []string) error {
	if _, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids}); err != nil && errorCode(err) != "InvalidInstanceID.NotFound" {
		return fmt.Errorf("terminate %v: %w", ids, err)
	}
	p.logf("aws: terminating %v", ids)
	deadline := time.Now().Add(p.cfg.RunningTimeout)
	for {
		out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
		if err != nil && errorCode(err) != "InvalidInstanceID.NotFound" {
			return fmt.Errorf("wait for termination of %v: %w", ids, err)
		}
		var left []string
		if out != nil {
			for _, r := range out.Reservations {
				for _, in := range r.Instances {
					if in.State == nil || in.State.Name != types.InstanceStateNameTerminated {
						left = append(left, sdkaws.ToString(in.InstanceId))
					}
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("instances %v not terminated after %v", left, p.cfg.RunningTimeout)
		}
		if err := sleep(ctx, p.cfg.Poll); err != nil {
			return fmt.Errorf("wait for termination of %v: %w", left, err)
		}
	}
}

// inUse are the codes EC2 gives while a resource still has dependents.
var inUse = map[string]bool{"DependencyViolation": true, "InvalidPlacementGroup.InUse": true, "ResourceInUse": true}

// gone are the codes for a resource that is already deleted.
var gone = map[string]bool{"InvalidGroup.NotFound": true, "InvalidPlacementGroup.Unknown": true, "InvalidKeyPair.NotFound": true}

func (p *Provider) deleteRetrying(ctx context.Context, r Resource, del func() error) error {
	deadline := time.Now().Add(p.cfg.DeleteTimeout)
	for attempt := 1; ; attempt++ {
		err := del()
		code := errorCode(err)
		switch {
		case err == nil || gone[code]:
			return nil
		case !inUse[code]:
			return fmt.Errorf("delete %s %s: %w", r.Kind, r.ID, err)
		case time.Now().After(deadline):
			return fmt.Errorf("delete %s %s: still in use after %d attempts over %v: %w", r.Kind, r.ID, attempt, p.cfg.DeleteTimeout, err)
		}
		p.logf("aws: %s %s in use; retrying", r.Kind, r.ID)
		if err := sleep(ctx, p.cfg.Poll); err != nil {
			return fmt.Errorf("delete %s %s: %w", r.Kind, r.ID, err)
		}
	}
}

// GCReport is what GC found and did, per campaign.
type GCReport struct {
	Campaign  string     `json:"campaign"`
	Resources []Resource `json:"resources"`
	Action    string     `json:"action"` // removed, kept (live), kept (young), failed: …
}

// GC removes everything tagged by linerate whose campaign is not live.
// alive says whether a campaign runs now; resources younger than minAge
// are kept (a campaign that is still starting may not hold its lock yet).
func (p *Provider) GC(ctx context.Context, alive func(campaign string) bool, minAge time.Duration, dryRun bool) ([]GCReport, error) {
	res, err := p.Resources(ctx, "")
	if err != nil {
		return nil, err
	}
	byCampaign := map[string][]Resource{}
	for _, r := range res {
		byCampaign[r.Campaign] = append(byCampaign[r.Campaign], r)
	}
	var names []string
	for c := range byCampaign {
		names = append(names, c)
	}
	sort.Strings(names)
	var out []GCReport
	var errs []error
	for _, c := range names {
		rep := GCReport{Campaign: c, Resources: byCampaign[c]}
		young := false
		for _, r := range rep.Resources {
			if !r.Created.IsZero() && time.Since(r.Created) < minAge {
				young = true
			}
		}
		switch {
		case alive != nil && alive(c):
			rep.Action = "kept (campaign live)"
		case young:
			rep.Action = fmt.Sprintf("kept (younger than %v)", minAge)
		case dryRun:
			rep.Action = "would remove"
		default:
			if err := p.downCampaign(ctx, c, nil); err != nil {
				rep.Action = "failed: " + err.Error()
				errs = append(errs, err)
			} else {
				rep.Action = "removed"
			}
		}
		out = append(out, rep)
	}
	return out, errors.Join(errs...)
}
