package aws

import (
	"context"
	"errors"
	"fmt"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// A run's resources carry its owner ID and a lease: the time until which
// they are its own. While the coordinator runs it moves the lease forward
// every Renew; a coordinator that died (SIGKILL, a lost machine) stops
// renewing, and once the lease has passed, GC may remove what it left.

// startRenewing renews the owner's lease every Renew until stopRenewing.
func (p *Provider) startRenewing() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopRenew != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	p.stopRenew = func() { cancel(); <-done }
	go func() {
		defer close(done)
		t := time.NewTicker(p.cfg.Renew)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, p.cfg.Lease/2)
			err := p.renew(rctx, time.Now().Add(p.cfg.Lease))
			rcancel()
			if err != nil && ctx.Err() == nil {
				p.logf("aws: renew the lease of owner %s: %v (tried again in %v)", p.Owner(), err, p.cfg.Renew)
			}
		}
	}()
}

// stopRenewing ends the renewal and waits until it has stopped.
func (p *Provider) stopRenewing() {
	p.mu.Lock()
	stop := p.stopRenew
	p.stopRenew = nil
	p.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// renew sets the lease of everything the owner has to until. One listing
// is enough: what it misses now, the next renewal finds.
func (p *Provider) renew(ctx context.Context, until time.Time) error {
	p.mu.Lock()
	owner := p.owner
	ids := map[string]bool{}
	for _, in := range p.instances {
		ids[in.ID] = true
	}
	p.mu.Unlock()
	res, err := p.Resources(ctx, Selector{Owner: owner})
	if err != nil {
		return err
	}
	for _, r := range res {
		ids[r.ID] = true
	}
	if len(ids) == 0 {
		return nil
	}
	return p.tag(ctx, sortedKeys(ids), TagLease, until.UTC().Format(time.RFC3339))
}

// tag sets key=value on the resources. One ID EC2 does not know fails
// the whole CreateTags, so then each is tagged alone and unknown ones
// (deleted meanwhile, or not known yet) are skipped.
func (a *Account) tag(ctx context.Context, ids []string, key, value string) error {
	in := func(ids []string) *ec2.CreateTagsInput {
		return &ec2.CreateTagsInput{Resources: ids, Tags: []types.Tag{{Key: sdkaws.String(key), Value: sdkaws.String(value)}}}
	}
	_, err := a.ec2.CreateTags(ctx, in(ids))
	if !notFound[errorCode(err)] {
		return err
	}
	var errs []error
	for _, id := range ids {
		if _, err := a.ec2.CreateTags(ctx, in([]string{id})); err != nil && !notFound[errorCode(err)] {
			errs = append(errs, fmt.Errorf("tag %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// HandOver ends the renewal and sets the lease to the dead-man deadline:
// the pair outlives this process on purpose (`linerate infra up`) and is
// the operator's to take down, or the dead-man's. It returns the deadline.
func (p *Provider) HandOver(ctx context.Context) (time.Time, error) {
	p.stopRenewing()
	p.mu.Lock()
	deadline := p.deadline
	p.mu.Unlock()
	if err := p.renew(ctx, deadline); err != nil {
		return deadline, fmt.Errorf("aws: hand the pair over until %s: %w", deadline.Format(time.RFC3339), err)
	}
	return deadline, nil
}
