package aws

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Down terminates the owner's instances, waits until they are gone, then
// deletes its placement group, security group and key pair (and the
// created key's private half), retrying while AWS says they are in use.
// It touches only resources tagged with this provider's owner, found by
// tag (listed until two listings agree) plus the instance IDs Up saw. It
// returns nil only once a listing shows nothing of the owner; otherwise
// the error wraps ErrNotTornDown. Down before Up is nil.
func (p *Provider) Down(ctx context.Context) error {
	p.mu.Lock()
	campaign, owner, dir := p.campaign, p.owner, p.dir
	var known []string
	for _, in := range p.instances {
		known = append(known, in.ID)
	}
	hosts := p.hosts
	p.hosts = nil
	p.mu.Unlock()
	for _, h := range hosts {
		h.Close()
	}
	// The lease stays fresh while the teardown runs, so no GC races it.
	defer p.stopRenewing()
	if campaign == "" {
		return nil
	}
	n, err := p.teardown(ctx, Selector{Owner: owner}, nil, known)
	if err != nil {
		return fmt.Errorf("aws down %s (owner %s): %w: %w", campaign, owner, ErrNotTornDown, err)
	}
	if dir != "" {
		if err := os.Remove(pemFile(dir, resourceName(campaign, owner))); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("aws down %s: remove the private key of its deleted key pair: %w", campaign, err)
		}
	}
	p.mu.Lock()
	p.instances = nil
	p.mu.Unlock()
	if n > 0 {
		p.logf("aws: campaign %s (owner %s) torn down: %d resources", campaign, owner, n)
	}
	return nil
}

// teardown removes what sel picks (and keep, when given, keeps), plus the
// known instance IDs, and returns how many resources it removed. It
// lists again after each round, so a resource EC2 lists only late is
// still found, and succeeds only when a listing comes back empty.
func (a *Account) teardown(ctx context.Context, sel Selector, keep func(Resource) bool, known []string) (int, error) {
	list := func() ([]Resource, error) {
		rs, err := a.listStable(ctx, sel)
		if err != nil || keep == nil {
			return rs, err
		}
		var out []Resource
		for _, r := range rs {
			if keep(r) {
				out = append(out, r)
			}
		}
		return out, nil
	}
	removed := 0
	for round := 0; round < 3; round++ {
		res, err := list()
		if err != nil {
			return removed, err
		}
		ids := map[string]bool{}
		for _, id := range known {
			ids[id] = true
		}
		known = nil
		for _, r := range res {
			if r.Kind == "instance" {
				ids[r.ID] = true
			}
		}
		if len(res) == 0 && len(ids) == 0 {
			return removed, nil
		}
		if len(ids) > 0 {
			if err := a.terminate(ctx, sortedKeys(ids)); err != nil {
				return removed, err
			}
		}
		if err := errors.Join(a.deleteGroups(ctx, res)...); err != nil {
			return removed, err
		}
		removed += len(res)
	}
	res, err := list()
	if err == nil && len(res) > 0 {
		err = fmt.Errorf("still listed after three rounds: %s", describe(res))
	}
	return removed, err
}

func describe(rs []Resource) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.Kind + " " + r.ID
	}
	return strings.Join(s, ", ")
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
func (a *Account) terminate(ctx context.Context, ids []string) error {
	_, err := a.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids})
	wait := ids
	switch {
	case notFound[errorCode(err)]:
		// One ID EC2 does not know rejects the whole call and the others
		// keep running: each alone, an unknown one asked again for a while
		// (it may be too new to be known).
		wait = nil
		for _, id := range ids {
			err := a.retryNotFound(ctx, func() error {
				_, err := a.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
				return err
			})
			switch {
			case notFound[errorCode(err)]:
				a.logf("aws: instance %s unknown to EC2 for %v; taken as never launched", id, a.cfg.NotFoundTimeout)
			case err != nil:
				return fmt.Errorf("terminate %s: %w", id, err)
			default:
				wait = append(wait, id)
			}
		}
	case err != nil:
		return fmt.Errorf("terminate %v: %w", ids, err)
	}
	if len(wait) == 0 {
		return nil
	}
	a.logf("aws: terminating %v", wait)
	deadline := time.Now().Add(a.cfg.RunningTimeout)
	for {
		found, _, err := a.describeInstances(ctx, wait)
		if err != nil {
			return fmt.Errorf("wait for termination of %v: %w", wait, err)
		}
		var left []string
		for _, in := range found {
			if in.State == nil || in.State.Name != types.InstanceStateNameTerminated {
				left = append(left, sdkaws.ToString(in.InstanceId))
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("instances %v not terminated after %v", left, a.cfg.RunningTimeout)
		}
		if err := sleep(ctx, a.cfg.Poll); err != nil {
			return fmt.Errorf("wait for termination of %v: %w", left, err)
		}
	}
}

// retryNotFound runs fn until EC2 knows the IDs it names, backing off from
// Poll, for at most NotFoundTimeout; it returns fn's last error.
func (a *Account) retryNotFound(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(a.cfg.NotFoundTimeout)
	wait := a.cfg.Poll
	for {
		err := fn()
		if !notFound[errorCode(err)] || time.Now().After(deadline) {
			return err
		}
		if serr := sleep(ctx, wait); serr != nil {
			return errors.Join(err, serr)
		}
		wait = min(2*wait, max(a.cfg.Poll, a.cfg.NotFoundTimeout/4))
	}
}

// deleteGroups deletes the placement groups, security groups and key
// pairs among rs.
func (a *Account) deleteGroups(ctx context.Context, rs []Resource) []error {
	var errs []error
	for _, r := range rs {
		var del func() error
		switch r.Kind {
		case "placement-group":
			del = func() error {
				_, err := a.ec2.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: sdkaws.String(r.Name)})
				return err
			}
		case "security-group":
			del = func() error {
				_, err := a.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: sdkaws.String(r.ID)})
				return err
			}
		case "key-pair":
			del = func() error {
				_, err := a.ec2.DeleteKeyPair(ctx, &ec2.DeleteKeyPairInput{KeyPairId: sdkaws.String(r.ID)})
				return err
			}
		default:
			continue
		}
		if err := a.deleteRetrying(ctx, r, del); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// inUse are the codes EC2 gives while a resource still has dependents.
var inUse = map[string]bool{"DependencyViolation": true, "InvalidPlacementGroup.InUse": true, "ResourceInUse": true}

func (a *Account) deleteRetrying(ctx context.Context, r Resource, del func() error) error {
	deadline := time.Now().Add(a.cfg.DeleteTimeout)
	for attempt := 1; ; attempt++ {
		err := del()
		code := errorCode(err)
		switch {
		case err == nil || notFound[code]:
			return nil
		case !inUse[code]:
			return fmt.Errorf("delete %s %s: %w", r.Kind, r.ID, err)
		case time.Now().After(deadline):
			return fmt.Errorf("delete %s %s: still in use after %d attempts over %v: %w", r.Kind, r.ID, attempt, a.cfg.DeleteTimeout, err)
		}
		a.logf("aws: %s %s in use; retrying", r.Kind, r.ID)
		if err := sleep(ctx, a.cfg.Poll); err != nil {
			return fmt.Errorf("delete %s %s: %w", r.Kind, r.ID, err)
		}
	}
}
