package session

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/linerate/linerate/infra/aws"
	"github.com/linerate/linerate/sweeps"
)

// Facts are what a preflight learnt that a run records (env.json).
type Facts struct {
	// StatedLink is the network performance the provider states for the
	// hosts ("200 Gigabit": aws's NetworkPerformance of the type).
	StatedLink string
}

// preflight runs the row's Preflight, its table on out, or as progress
// lines when out is nil.
func (r *Row) preflight(ctx context.Context, s Settings, op *Operator, campaign string, out io.Writer) (Facts, error) {
	if r.Preflight == nil {
		return Facts{}, nil
	}
	if out != nil {
		return r.Preflight(ctx, s, op, campaign, out)
	}
	var b bytes.Buffer
	facts, err := r.Preflight(ctx, s, op, campaign, &b)
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		if line != "" {
			op.logf("%s", line)
		}
	}
	return facts, err
}

// Preflight checks, creating nothing, that campaign c's hosts can come
// up: the provider's checks of the settings and the operator's word
// (Row.Check), then its preflight, whose table goes to out. A kind
// without a preflight says so and passes. Its errors are *InputError.
func (t *Table) Preflight(ctx context.Context, c *sweeps.Campaign, op *Operator, out io.Writer) error {
	row, s, err := t.settings(c)
	if err != nil {
		return input(err)
	}
	if err := checkRow(c, row, s, op, Work{What: "the preflight"}); err != nil {
		return err
	}
	if row.Preflight == nil {
		fmt.Fprintf(out, "provider %s: nothing to check before it runs\n", row.Kind)
		return nil
	}
	_, err = row.preflight(ctx, s, op, c.Name, out)
	return err
}

// AWSPolicy is the IAM policy linerate needs (aws.Policy) as JSON, for
// region, or when region is "" the region of the campaign in file (""
// for none: every region). Its errors are *InputError.
func (t *Table) AWSPolicy(file, region string) ([]byte, error) {
	if file != "" && region == "" {
		c, err := t.Load(file)
		if err != nil {
			return nil, input(err)
		}
		row, s, err := t.settings(c)
		if err != nil {
			return nil, input(err)
		}
		as, ok := s.(*aws.Settings)
		if !ok {
			return nil, input(fmt.Errorf("%s: provider %s: the policy is the aws provider's", file, row.Kind))
		}
		region = as.Region
	}
	return aws.Policy(region).JSON(), nil
}
