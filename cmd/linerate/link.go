package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/session"
)

func init() {
	register(command{name: "link", summary: "measure the link between a campaign's hosts (sink + bench, 1 and N flows)", run: runLink})
}

const linkUsage = `Usage: linerate link CAMPAIGN.yaml [flags]

Measures the link between a campaign's hosts, as sweep run does before its
first cell: linerate sink on the server host, linerate bench from the client
host(s) with 1 connection and with N, GETs (server to client) and SETs
(client to server). The sink answers as cheaply as a server can, so the
figures are the link's, and the client's, ceiling: Gbps on the wire. They are
stored as "link" in RUNDIR/env.json, where plot and report draw them on the
Gbps charts and the limit label holds each cell to them (a cell within 5% is
labelled link). On AWS, a cell during which the NIC counted an allowance
exceeded (ethtool -S: bw_in/bw_out/pps_allowance_exceeded) is labelled
link-allowance instead: the cloud shaped the link.

The hosts are brought up, tuned with the campaign's profile, measured and
taken down, as sweep run does; the local provider has no link (loopback).

Examples:
  sudo linerate link sweeps/campaigns/local.yaml               # the netns pair, into runs/local
  linerate link lab.yaml --duration 30s --connections 64       # provider: ssh
  linerate link study.yaml --aws-profile lab --region us-east-1 \
      --ssh-from 203.0.113.7/32 --json                         # provider: aws

Defaults are the campaign's calibrate block (10s runs, 1s warmup, 8MiB
values, N the campaign's largest connection count).

Flags:
`

func runLink(ctx context.Context, args []string) int {
	fs := pflag.NewFlagSet("link", pflag.ContinueOnError)
	fs.SortFlags = false
	out := fs.String("out", "", "run directory whose env.json gets the link (default runs/<campaign name>)")
	dur := fs.String("duration", "", "each run's measured window, 1s-10m (default the campaign's, else 10s)")
	warmup := fs.String("warmup", "", "each run's warmup, 0s-1m (default the campaign's, else 1s)")
	conns := fs.String("connections", "", fmt.Sprintf("N of the N-flow runs, over every client host, 1-%d (default the campaign's largest)", lab.MaxConnections))
	size := fs.String("value-size", "", "value size the sink serves and SETs carry (default 8MiB)")
	asJSON := fs.Bool("json", false, "print the link as JSON (env.json's link)")
	profiles := fs.String("profiles", "tuning/profiles", "where the campaign's tuning profile NAME is found as NAME.yaml")
	ra := bindRemoteFlags(fs)
	fs.Usage = func() { fmt.Fprint(os.Stderr, linkUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "linerate link: %v (see linerate link --help)\n", err)
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "linerate link: give one campaign file (see linerate link --help)")
		return 2
	}
	var k sweeps.Calibration
	for _, f := range []struct {
		flag, v string
		set     func(string) error
	}{{"--duration", *dur, k.SetDuration}, {"--warmup", *warmup, k.SetWarmup}, {"--connections", *conns, k.SetConnections}, {"--value-size", *size, k.SetValueSize}} {
		if f.v == "" {
			continue
		}
		if err := f.set(f.v); err != nil {
			fmt.Fprintf(os.Stderr, "linerate link: %s %v\n", f.flag, err)
			return 2
		}
	}
	c, err := session.Default().Load(fs.Arg(0))
	if err == nil {
		err = session.Default().CheckLink(c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	need := 4 * (max(k.Warmup, c.Calibrate.Warmup).D() + max(k.Duration, c.Calibrate.Duration).D() + time.Minute)
	opt, code := ra.options("link", *profiles, session.Work{What: "the link calibration", Need: need})
	if code != 0 {
		return code
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("runs", c.Name)
	}
	s, code := openSession(ctx, c, dir, opt, "link")
	if s == nil {
		return code
	}
	defer closeSession(ctx, s, c, "link")
	l, err := s.Link(ctx, k)
	if err != nil {
		return failed(ctx, "link", err)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(l); err != nil {
			return 1
		}
		return 0
	}
	fmt.Print(sweeps.LinkText(l))
	fmt.Printf("stored in %s\n", filepath.Join(dir, sweeps.EnvFile))
	return 0
}
