package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/tuning"
)

func newTune() *cobra.Command {
	return completeFlags(completeArgs(command(helpText("tune"), "tune a host for a run: plan, apply, verify, revert (IRQs, queues, irqbalance, sysctls)", bindTune), positional(words("plan", "apply", "verify", "revert"))), map[string]cobra.CompletionFunc{
		"profile": profileFile,
		"root":    runDir,
	})
}

func bindTune(c *cli) func(context.Context) int {
	var r tuning.Request
	c.StringVar(&r.Profile, "profile", "", "profile `FILE` (YAML or JSON); plan, apply and verify need it")
	c.StringVar(&r.Snapshot, "snapshot", "", "apply: where to save the snapshot; revert: the snapshot to restore")
	c.StringVar(&r.Root, "root", "/", "root of the host's /proc, /sys and /etc; anything but / is a fixture tree")
	c.BoolVar(&r.JSON, "json", false, "print JSON (the plan, the verify report, the revert result)")
	c.BoolVar(&r.Force, "force", false, "apply: overwrite an existing --snapshot file")
	return func(ctx context.Context) int {
		if code, done := c.want(1, 1, "name one action: plan, apply, verify or revert"); done {
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
}
