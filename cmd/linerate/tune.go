package main

import (
	"context"
	"os"

	"github.com/linerate/linerate/tuning"
)

func init() {
	register(command{name: "tune", summary: "tune a host for a run: plan, apply, verify, revert (IRQs, queues, irqbalance, sysctls)", run: runTune})
}

const tuneUsage = `Usage: linerate tune <plan|apply|verify|revert> [flags]

Keeps NIC interrupts, the server and the client off each other's cores, the
way the reference study tuned its hosts (irqbalance off, 4 queues, IRQs on
0-3), described as a profile file instead of a shell snippet. Fields the
profile leaves out are derived from the host's cores, SMT siblings and the
NIC's NUMA node; docs/tuning.md has the fields and the rules.

  plan    show the host's state, the desired state and the exact changes;
          changes nothing
  apply   save a snapshot of everything it will touch to --snapshot, make
          the changes, verify; a change the kernel refuses is reported with
          the file and value, and what was already done is rolled back
  verify  list every way the host differs from the profile (an IRQ moved,
          irqbalance running again, a queue count changed); exit 1 on drift
  revert  restore --snapshot and check the host equals it field for field

Examples:
  linerate tune plan   --profile tuning/profiles/study-c8gn.yaml
  sudo linerate tune apply  --profile tuning/profiles/study-c8gn.yaml --snapshot /var/tmp/tune.json
  linerate tune verify --profile tuning/profiles/study-c8gn.yaml --json
  sudo linerate tune revert --snapshot /var/tmp/tune.json
  linerate tune plan --profile p.yaml --root /tmp/fixture   # a fixture tree
  linerate tune plan --profile tuning/profiles/study-c8gn.yaml --root tuning/testdata/graviton-c8gn16xl.txtar

A minimal profile (everything else derived):
  nic: ens50            # or  nic_address: 10.0.1.15

--root other than / reads and writes a fixture tree: its files stand for
/proc, /sys and /etc, and its _fixture/ directory for queue counts and
systemd units (see tuning/testdata). A .txtar archive of one is expanded
into a temporary copy, which is removed when tune ends.

Exit codes: 0 done (verify: no drift), 1 failed (verify: drift), 2 bad input.

Flags:
`

func runTune(ctx context.Context, args []string) int {
	c := newCLI("tune", tuneUsage)
	var r tuning.Request
	c.StringVar(&r.Profile, "profile", "", "profile file (YAML or JSON); plan, apply and verify need it")
	c.StringVar(&r.Snapshot, "snapshot", "", "apply: where to save the snapshot; revert: the snapshot to restore")
	c.StringVar(&r.Root, "root", "/", "root of the host's /proc, /sys and /etc; anything but / is a fixture tree")
	c.BoolVar(&r.JSON, "json", false, "print JSON (the plan, the verify report, the revert result)")
	c.BoolVar(&r.Force, "force", false, "apply: overwrite an existing --snapshot file")
	if code, done := c.parse(args, 1, 1, "name one action: plan, apply, verify or revert"); done {
		return code
	}
	r.Action = c.Arg(0)
	c.who, c.input = "tune "+r.Action, is[*tuning.InputError]
	drift, err := tuning.Do(ctx, r, os.Stdout, os.Stderr)
	if drift && err == nil {
		return 1
	}
	return c.end(err)
}
