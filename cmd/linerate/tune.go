package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/sweeps"
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
	fs := pflag.NewFlagSet("tune", pflag.ContinueOnError)
	fs.SortFlags = false
	profilePath := fs.String("profile", "", "profile file (YAML or JSON); plan, apply and verify need it")
	snapPath := fs.String("snapshot", "", "apply: where to save the snapshot; revert: the snapshot to restore")
	root := fs.String("root", "/", "root of the host's /proc, /sys and /etc; anything but / is a fixture tree")
	asJSON := fs.Bool("json", false, "print JSON (the plan, the verify report, the revert result)")
	force := fs.Bool("force", false, "apply: overwrite an existing --snapshot file")
	fs.Usage = func() { fmt.Fprint(os.Stderr, tuneUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "linerate tune: %v (see linerate tune --help)\n", err)
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "linerate tune: name one action: plan, apply, verify or revert (see linerate tune --help)")
		return 2
	}
	action := fs.Arg(0)
	bad := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "linerate tune %s: "+format+"\n", append([]any{action}, a...)...)
		return 2
	}
	switch action {
	case "plan", "apply", "verify", "revert":
	default:
		return bad("unknown action (accepted: plan, apply, verify, revert)")
	}
	if *root == "" {
		return bad("--root: empty (give a directory; default /)")
	}
	if strings.HasSuffix(*root, ".txtar") {
		// A fixture archive (tuning/testdata): expand it to try the
		// operations on that host; changes land in the copy, which goes
		// when tune ends.
		dir, err := os.MkdirTemp("", "linerate-fixture-")
		if err != nil {
			return bad("--root %s: %v", *root, err)
		}
		defer os.RemoveAll(dir)
		if err := tuning.ExpandFixtureFile(*root, dir); err != nil {
			return bad("--root %s: %v", *root, err)
		}
		fmt.Fprintf(os.Stderr, "tune: fixture %s expanded into %s (removed when tune ends)\n", *root, dir)
		*root = dir
	}
	if st, err := os.Stat(*root); err != nil || !st.IsDir() {
		return bad("--root %s: not a directory (nor a .txtar fixture)", *root)
	}
	host := tuning.NewLiveHost("/")
	if filepath.Clean(*root) != "/" {
		host = tuning.NewFixtureHost(*root)
	}

	if action == "revert" {
		if *profilePath != "" {
			return bad("--profile: revert restores the snapshot and takes no profile")
		}
		if *snapPath == "" {
			return bad("--snapshot: missing (the file apply saved)")
		}
		snap, err := readSnapshot(*snapPath)
		if err != nil {
			return bad("--snapshot %s: %v", *snapPath, err)
		}
		return tuneRevert(ctx, host, snap, *snapPath, *asJSON)
	}

	if *profilePath == "" {
		return bad("--profile: missing (a YAML file; see tuning/profiles/study-c8gn.yaml)")
	}
	data, err := os.ReadFile(*profilePath)
	if err != nil {
		return bad("--profile: %v", err)
	}
	p, err := tuning.ParseProfile(data)
	if err != nil {
		return bad("%s: %v", *profilePath, err)
	}
	// A profile that does not fit this host is bad input too: say where.
	hostErr := func(err error) int {
		var fe *tuning.FieldError
		if errors.As(err, &fe) {
			if fe.Line == 0 {
				fe.Line = tuning.ProfileLine(data, fe.Field)
			}
			return bad("%s: %v", *profilePath, fe)
		}
		if errors.Is(err, tuning.ErrUnknownInterface) {
			field := "nic"
			if p.NIC == "" {
				field = "nic_address"
			}
			return bad("%s: line %d: %s: %v", *profilePath, tuning.ProfileLine(data, field), field, err)
		}
		fmt.Fprintf(os.Stderr, "linerate tune %s: %v\n", action, err)
		return 1
	}

	switch action {
	case "plan":
		if *snapPath != "" {
			return bad("--snapshot: plan changes nothing and saves no snapshot")
		}
		pl, err := tuning.MakePlan(ctx, host, p)
		if err != nil {
			return hostErr(err)
		}
		if *asJSON {
			return tunePrintJSON(pl)
		}
		pl.WriteText(os.Stdout)
		return 0
	case "verify":
		if *snapPath != "" {
			return bad("--snapshot: verify compares with the profile, not a snapshot")
		}
		rep, err := tuning.Verify(ctx, host, p)
		if err != nil {
			return hostErr(err)
		}
		if *asJSON {
			tunePrintJSON(rep)
		} else {
			rep.WriteText(os.Stdout)
		}
		if !rep.OK {
			return 1
		}
		return 0
	}

	// apply
	if *snapPath == "" {
		return bad("--snapshot: missing (where to save the state apply changes, for revert)")
	}
	if _, err := os.Stat(*snapPath); err == nil && !*force {
		return bad("--snapshot %s: exists; revert it first, or pass --force to replace it", *snapPath)
	}
	pl, err := tuning.MakePlan(ctx, host, p)
	if err != nil {
		return hostErr(err)
	}
	_, rep, err := tuning.ApplyWith(ctx, host, p, func(s tuning.Snapshot) error { return writeSnapshot(*snapPath, s) })
	if err != nil {
		return hostErr(err)
	}
	if *asJSON {
		return tunePrintJSON(struct {
			Snapshot string          `json:"snapshot"`
			Changes  []tuning.Change `json:"changes"`
			Report   tuning.Report   `json:"report"`
			Desired  tuning.Desired  `json:"desired"`
		}{*snapPath, pl.Changes, rep, pl.Desired})
	}
	fmt.Printf("applied %d change(s); snapshot saved to %s\n", len(pl.Changes), *snapPath)
	for _, c := range pl.Changes {
		fmt.Printf("  %s\n", c)
	}
	rep.WriteText(os.Stdout)
	return 0
}

func tuneRevert(ctx context.Context, host tuning.Host, snap tuning.Snapshot, path string, asJSON bool) int {
	rerr := tuning.Revert(ctx, host, snap)
	now, cerr := tuning.CaptureLike(ctx, host, snap)
	equal := cerr == nil && reflect.DeepEqual(now, snap.State)
	if asJSON {
		res := struct {
			Snapshot string       `json:"snapshot"`
			Restored bool         `json:"restored"`
			Error    string       `json:"error,omitempty"`
			State    tuning.State `json:"state"`
		}{Snapshot: path, Restored: rerr == nil && equal, State: now}
		if err := errors.Join(rerr, cerr); err != nil {
			res.Error = err.Error()
		}
		tunePrintJSON(res)
	}
	switch {
	case rerr != nil:
		fmt.Fprintf(os.Stderr, "linerate tune revert: %v\n", rerr)
		return 1
	case cerr != nil:
		fmt.Fprintf(os.Stderr, "linerate tune revert: read the host back: %v\n", cerr)
		return 1
	case !equal:
		fmt.Fprintf(os.Stderr, "linerate tune revert: the host still differs from %s after revert\n", path)
		return 1
	}
	if !asJSON {
		fmt.Printf("reverted to the snapshot taken %s (%s): the host matches it\n", snap.Taken.Format("2006-01-02 15:04:05 UTC"), path)
	}
	return 0
}

func readSnapshot(path string) (tuning.Snapshot, error) {
	var s tuning.Snapshot
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("not a tune snapshot: %w", err)
	}
	if s.Version != tuning.SnapshotVersion {
		return s, fmt.Errorf("snapshot version %d, this linerate reads version %d", s.Version, tuning.SnapshotVersion)
	}
	return s, nil
}

// writeSnapshot replaces the file atomically, so a crash leaves the old or
// the new snapshot, never half of one.
func writeSnapshot(path string, s tuning.Snapshot) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return sweeps.WriteFileAtomic(path, append(b, '\n'))
}

func tunePrintJSON(v any) int {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(os.Stderr, "linerate tune: %v\n", err)
		return 1
	}
	return 0
}
