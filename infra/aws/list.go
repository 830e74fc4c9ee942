package aws

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Resource is one thing linerate created in AWS.
type Resource struct {
	Kind     string    `json:"kind"` // instance, placement-group, security-group, key-pair
	ID       string    `json:"id"`
	Name     string    `json:"name,omitempty"`
	Campaign string    `json:"campaign"`
	Owner    string    `json:"owner,omitempty"` // "" for resources of a linerate before owner tags
	State    string    `json:"state,omitempty"`
	Lease    time.Time `json:"lease,omitzero"`
	Created  time.Time `json:"created,omitzero"`
	Deadline time.Time `json:"deadline,omitzero"`
}

// Selector picks resources by tag; empty fields match any value, and the
// empty Selector everything linerate made.
type Selector struct {
	Campaign, Owner string
}

func selectorFilters(s Selector) []types.Filter {
	var fs []types.Filter
	if s.Campaign != "" {
		fs = append(fs, types.Filter{Name: sdkaws.String("tag:" + TagCampaign), Values: []string{s.Campaign}})
	}
	if s.Owner != "" {
		fs = append(fs, types.Filter{Name: sdkaws.String("tag:" + TagOwner), Values: []string{s.Owner}})
	}
	if len(fs) == 0 {
		fs = []types.Filter{{Name: sdkaws.String("tag-key"), Values: []string{TagCampaign}}}
	}
	return fs
}

// liveStates are the instance states that still cost or still block their
// security and placement groups.
var liveStates = []string{"pending", "running", "shutting-down", "stopping", "stopped"}

func resourceOf(kind, id, name, state string, ts []types.Tag) Resource {
	r := Resource{Kind: kind, ID: id, Name: name, State: state}
	for _, t := range ts {
		v := sdkaws.ToString(t.Value)
		switch sdkaws.ToString(t.Key) {
		case TagCampaign:
			r.Campaign = v
		case TagOwner:
			r.Owner = v
		case TagLease:
			r.Lease, _ = time.Parse(time.RFC3339, v)
		case TagCreated:
			r.Created, _ = time.Parse(time.RFC3339, v)
		case TagDeadline:
			r.Deadline, _ = time.Parse(time.RFC3339, v)
		}
	}
	return r
}

// Resources lists what linerate created that sel picks, instances that are
// not yet terminated included. One listing: EC2 may not list a new
// resource by tag yet (listStable asks until two listings agree).
func (a *Account) Resources(ctx context.Context, sel Selector) ([]Resource, error) {
	var out []Resource
	var next *string
	for page := 0; page < 100; page++ {
		ins, err := a.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{
			Filters:   append(selectorFilters(sel), types.Filter{Name: sdkaws.String("instance-state-name"), Values: liveStates}),
			NextToken: next,
		})
		if err != nil {
			return nil, fmt.Errorf("aws: list instances: %w", err)
		}
		for _, r := range ins.Reservations {
			for _, in := range r.Instances {
				st := ""
				if in.State != nil {
					st = string(in.State.Name)
				}
				out = append(out, resourceOf("instance", sdkaws.ToString(in.InstanceId), "", st, in.Tags))
			}
		}
		if next = ins.NextToken; next == nil {
			break
		}
	}
	pgs, err := a.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{Filters: selectorFilters(sel)})
	if err != nil {
		return nil, fmt.Errorf("aws: list placement groups: %w", err)
	}
	for _, g := range pgs.PlacementGroups {
		out = append(out, resourceOf("placement-group", sdkaws.ToString(g.GroupId), sdkaws.ToString(g.GroupName), string(g.State), g.Tags))
	}
	sgs, err := a.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: selectorFilters(sel)})
	if err != nil {
		return nil, fmt.Errorf("aws: list security groups: %w", err)
	}
	for _, g := range sgs.SecurityGroups {
		out = append(out, resourceOf("security-group", sdkaws.ToString(g.GroupId), sdkaws.ToString(g.GroupName), "", g.Tags))
	}
	keys, err := a.ec2.DescribeKeyPairs(ctx, &ec2.DescribeKeyPairsInput{Filters: selectorFilters(sel)})
	if err != nil {
		return nil, fmt.Errorf("aws: list key pairs: %w", err)
	}
	for _, k := range keys.KeyPairs {
		out = append(out, resourceOf("key-pair", sdkaws.ToString(k.KeyPairId), sdkaws.ToString(k.KeyName), "", k.Tags))
	}
	return out, nil
}

// listStable lists until two listings in a row name the same resources
// (at most six listings, Poll apart): a resource EC2 lists by tag only a
// moment after it was made shows up in the second and third.
func (a *Account) listStable(ctx context.Context, sel Selector) ([]Resource, error) {
	prev, err := a.Resources(ctx, sel)
	if err != nil {
		return nil, err
	}
	for i := 0; i < 5; i++ {
		if err := sleep(ctx, a.cfg.Poll); err != nil {
			return nil, err
		}
		cur, err := a.Resources(ctx, sel)
		if err != nil {
			return nil, err
		}
		if sameResources(prev, cur) {
			return cur, nil
		}
		prev = cur
	}
	a.logf("aws: the listing of %+v did not settle; going on with the last one", sel)
	return prev, nil
}

func sameResources(a, b []Resource) bool {
	key := func(rs []Resource) string {
		s := make([]string, len(rs))
		for i, r := range rs {
			s[i] = r.Kind + " " + r.ID
		}
		sort.Strings(s)
		return strings.Join(s, ",")
	}
	return len(a) == len(b) && key(a) == key(b)
}

// notFound are the codes EC2 gives for an ID it does not know (yet).
var notFound = map[string]bool{
	"InvalidInstanceID.NotFound": true, "InvalidGroup.NotFound": true,
	"InvalidPlacementGroup.Unknown": true, "InvalidKeyPair.NotFound": true,
}

// describeInstances describes ids. One ID EC2 does not know fails a whole
// DescribeInstances, so then each is asked alone; unknown lists those EC2
// does not know.
func (a *Account) describeInstances(ctx context.Context, ids []string) (found []types.Instance, unknown []string, err error) {
	collect := func(out *ec2.DescribeInstancesOutput) {
		for _, r := range out.Reservations {
			found = append(found, r.Instances...)
		}
	}
	out, err := a.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err == nil {
		collect(out)
		return found, nil, nil
	}
	if !notFound[errorCode(err)] || len(ids) == 1 {
		if notFound[errorCode(err)] {
			return nil, ids, nil
		}
		return nil, nil, err
	}
	for _, id := range ids {
		out, err := a.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		switch {
		case notFound[errorCode(err)]:
			unknown = append(unknown, id)
		case err != nil:
			return nil, nil, err
		default:
			collect(out)
		}
	}
	return found, unknown, nil
}
