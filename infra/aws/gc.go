package aws

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Claim is what one owner holds, as GC sees it.
type Claim struct {
	// Owner is the run that made the resources; "" for resources of a
	// linerate that did not tag owners (grouped by campaign).
	Owner    string `json:"owner"`
	Campaign string `json:"campaign"`
	// Lease is the latest lease among the resources; for resources
	// without an owner, their dead-man deadline (zero when none).
	Lease     time.Time  `json:"lease,omitzero"`
	Resources []Resource `json:"resources"`
}

// Expired reports whether the claim's lease has passed at now.
func (c Claim) Expired(now time.Time) bool { return !c.Lease.After(now) }

// Why says, for a listing, why the claim is kept or removed at now.
func (c Claim) Why(now time.Time) string {
	age := func(d time.Duration) string { return d.Round(time.Second).String() }
	switch {
	case c.Owner == "" && c.Lease.IsZero():
		return "no owner or lease tag (made by an older linerate)"
	case c.Owner == "" && c.Expired(now):
		return "no owner tag (made by an older linerate); dead-man deadline passed " + age(now.Sub(c.Lease)) + " ago"
	case c.Owner == "":
		return "no owner tag (made by an older linerate); dead-man deadline in " + age(c.Lease.Sub(now))
	case c.Expired(now):
		return "lease expired " + age(now.Sub(c.Lease)) + " ago"
	}
	return "lease runs " + age(c.Lease.Sub(now)) + " more"
}

// claimOf is the claim a set of resources of one owner makes.
func claimOf(owner, campaign string, rs []Resource) Claim {
	c := Claim{Owner: owner, Campaign: campaign, Resources: rs}
	for _, r := range rs {
		l := r.Lease
		if owner == "" {
			l = r.Deadline
		}
		if l.After(c.Lease) {
			c.Lease = l
		}
	}
	return c
}

// Claims lists everything linerate made in campaign ("" for every
// campaign), by owner, sorted by campaign and owner.
func (a *Account) Claims(ctx context.Context, campaign string) ([]Claim, error) {
	res, err := a.listStable(ctx, Selector{Campaign: campaign})
	if err != nil {
		return nil, err
	}
	type key struct{ campaign, owner string }
	groups := map[key][]Resource{}
	for _, r := range res {
		k := key{r.Campaign, r.Owner}
		groups[k] = append(groups[k], r)
	}
	var out []Claim
	for k, rs := range groups {
		out = append(out, claimOf(k.owner, k.campaign, rs))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Campaign != out[j].Campaign {
			return out[i].Campaign < out[j].Campaign
		}
		return out[i].Owner < out[j].Owner
	})
	return out, nil
}

// ErrLeaseRenewed is Collect's answer when the owner renewed its lease
// after the claim was listed: it runs, so nothing is removed.
var ErrLeaseRenewed = errors.New("its owner renewed the lease meanwhile")

// Collect removes an expired claim's resources. An owner's lease is read
// again first, so one that was renewed since the listing keeps them.
func (a *Account) Collect(ctx context.Context, c Claim) error {
	var err error
	if c.Owner == "" {
		_, err = a.teardown(ctx, Selector{Campaign: c.Campaign}, func(r Resource) bool { return r.Owner == "" }, nil)
	} else {
		cur, lerr := a.Resources(ctx, Selector{Owner: c.Owner})
		if lerr != nil {
			return fmt.Errorf("aws gc: owner %s: %w", c.Owner, lerr)
		}
		if now := claimOf(c.Owner, c.Campaign, cur); len(cur) > 0 && !now.Expired(time.Now()) {
			return fmt.Errorf("aws gc: owner %s: %w", c.Owner, ErrLeaseRenewed)
		}
		_, err = a.teardown(ctx, Selector{Owner: c.Owner}, nil, nil)
	}
	if err != nil {
		return fmt.Errorf("aws gc: owner %q of campaign %s: %w: %w", c.Owner, c.Campaign, ErrNotTornDown, err)
	}
	return nil
}

// collectExpired removes the claims in campaign whose lease has passed:
// what crashed earlier runs of it left.
func (p *Provider) collectExpired(ctx context.Context, campaign string) error {
	claims, err := p.Claims(ctx, campaign)
	if err != nil {
		return err
	}
	var errs []error
	now := time.Now()
	for _, c := range claims {
		if c.Owner == p.Owner() || !c.Expired(now) {
			continue
		}
		p.logf("aws: removing %d leftovers of campaign %s, owner %q: %s", len(c.Resources), campaign, c.Owner, c.Why(now))
		if err := p.Collect(ctx, c); err != nil && !errors.Is(err, ErrLeaseRenewed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
