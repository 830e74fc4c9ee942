package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/session"
)

func newLink() *cobra.Command {
	return completeFlags(completeArgs(command(helpText("link"), "measure the link between a campaign's hosts (sink + bench, 1 and N flows)", bindLink), positional(campaignFile)), map[string]cobra.CompletionFunc{
		"out":         runDir,
		"profiles":    runDir,
		"aws-profile": awsProfiles,
	})
}

func bindLink(c *cli) func(context.Context) int {
	out := c.String("out", "", "run directory whose env.json gets the link (default runs/<campaign name>)")
	var k sweeps.Calibration
	overrides := []struct {
		flag string
		v    *string
		set  func(string) error
	}{
		{"duration", c.String("duration", "", "each run's measured window, 200ms-10m (default the campaign's, else 10s)"), k.SetDuration},
		{"warmup", c.String("warmup", "", "each run's warmup, 0s-1m (default the campaign's, else 1s)"), k.SetWarmup},
		{"connections", c.String("connections", "", fmt.Sprintf("N of the N-flow runs, over every client host, 1-%d (default the campaign's largest)", fields.MaxConnections)), k.SetConnections},
		{"value-size", c.String("value-size", "", "value size the sink serves and SETs carry (default 8MiB)"), k.SetValueSize},
	}
	asJSON := c.Bool("json", false, "print the link as JSON (env.json's link)")
	r := bindRemoteFlags(c, "where the campaign's tuning profile NAME is found as NAME.yaml", "")
	return func(ctx context.Context) int {
		if code, done := c.want(1, 1, "give one campaign file"); done {
			return code
		}
		for _, o := range overrides {
			if *o.v == "" {
				continue
			}
			if err := o.set(*o.v); err != nil {
				return c.bad("--%s %v", o.flag, err)
			}
		}
		camp, err := session.Default().Load(c.Arg(0))
		if err == nil {
			err = session.Default().CheckLink(camp)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if code := r.startMetrics(c); code != 0 {
			return code
		}
		defer r.closeMetrics(ctx, c)
		dir := session.RunDir(*out, camp.Name)
		s, code := r.open(ctx, c, camp, dir, session.Work{What: "the link calibration", Need: sweeps.CalibrationNeed(camp.Calibrate, k)})
		if s == nil {
			return code
		}
		defer r.close(ctx, c, s)
		l, err := s.Link(ctx, k)
		switch {
		case err != nil:
			return c.end(err)
		case *asJSON:
			return c.json(l)
		}
		fmt.Print(sweeps.LinkText(l))
		fmt.Printf("stored in %s\n", filepath.Join(dir, sweeps.EnvFile))
		return 0
	}
}
