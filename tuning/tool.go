package tuning

// The operator's tool (`linerate tune`): plan, apply, verify and revert
// on one host, each writing what it found as text or JSON.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/linerate/linerate/lab/atomicfile"
)

// Request is one action as the operator gave it.
type Request struct {
	Action   string // plan, apply, verify or revert
	Profile  string // the profile file; plan, apply and verify need it
	Snapshot string // apply: where to save the snapshot; revert: the one to restore
	// Root is the host's /; anything else is a fixture tree, or a .txtar
	// archive of one expanded into a copy for the action's time.
	Root  string
	Force bool // apply: replace an existing snapshot file
	JSON  bool
}

// Do runs r, writing its report to out and notes to log. drift is true
// when verify found the host differs from the profile. Errors in what the
// operator gave are *InputError.
func Do(ctx context.Context, r Request, out, log io.Writer) (drift bool, err error) {
	switch r.Action {
	case "plan", "apply", "verify", "revert":
	default:
		return false, badf("unknown action (accepted: plan, apply, verify, revert)")
	}
	host, cleanup, err := openRoot(r.Root, log)
	if err != nil {
		return false, err
	}
	defer cleanup()
	t := tool{host: host, out: out, json: r.JSON}
	if r.Action == "revert" {
		if r.Profile != "" {
			return false, badf("--profile: revert restores the snapshot and takes no profile")
		}
		return false, t.revert(ctx, r.Snapshot)
	}
	pf, err := readProfileFile(r.Profile)
	if err != nil {
		return false, err
	}
	switch r.Action {
	case "plan":
		if r.Snapshot != "" {
			return false, badf("--snapshot: plan changes nothing and saves no snapshot")
		}
		return false, pf.locate(t.plan(ctx, pf.Profile))
	case "verify":
		if r.Snapshot != "" {
			return false, badf("--snapshot: verify compares with the profile, not a snapshot")
		}
		drift, err := t.verify(ctx, pf.Profile)
		return drift, pf.locate(err)
	}
	if r.Snapshot == "" {
		return false, badf("--snapshot: missing (where to save the state apply changes, for revert)")
	}
	if _, err := os.Stat(r.Snapshot); err == nil && !r.Force {
		return false, badf("--snapshot %s: exists; revert it first, or pass --force to replace it", r.Snapshot)
	}
	return false, pf.locate(t.apply(ctx, pf.Profile, r.Snapshot))
}

// InputError is an error in what the operator gave (the action, a flag,
// the profile or the snapshot file, a profile that does not fit the
// host): the CLI exits 2 on it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func badf(format string, a ...any) error { return &InputError{Err: fmt.Errorf(format, a...)} }

// openRoot is the host at root: this machine for /, else a fixture tree;
// a .txtar archive of one is expanded into a copy that cleanup removes.
func openRoot(root string, log io.Writer) (h Host, cleanup func(), err error) {
	cleanup = func() {}
	if root == "" {
		return h, cleanup, badf("--root: empty (give a directory; default /)")
	}
	if strings.HasSuffix(root, ".txtar") {
		// Changes land in the copy, which goes when the action ends.
		dir, err := os.MkdirTemp("", "linerate-fixture-")
		if err != nil {
			return h, cleanup, badf("--root %s: %v", root, err)
		}
		cleanup = func() { os.RemoveAll(dir) }
		if err := ExpandFixtureFile(root, dir); err != nil {
			return h, cleanup, badf("--root %s: %v", root, err)
		}
		fmt.Fprintf(log, "tune: fixture %s expanded into %s (removed when tune ends)\n", root, dir)
		root = dir
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return h, cleanup, badf("--root %s: not a directory (nor a .txtar fixture)", root)
	}
	if filepath.Clean(root) == "/" {
		return NewLiveHost("/"), cleanup, nil
	}
	return NewFixtureHost(root), cleanup, nil
}

// profileFile is a profile with the file it came from, to say where in
// it a field is.
type profileFile struct {
	Profile
	path string
	data []byte
}

func readProfileFile(path string) (*profileFile, error) {
	if path == "" {
		return nil, badf("--profile: missing (a YAML file; see tuning/profiles/study-c8gn.yaml)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, badf("--profile: %v", err)
	}
	p, err := ParseProfile(data)
	if err != nil {
		return nil, badf("%s: %v", path, err)
	}
	return &profileFile{Profile: p, path: path, data: data}, nil
}

// locate makes an error of a profile that does not fit the host bad
// input, naming the file and line.
func (pf *profileFile) locate(err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		if fe.Line == 0 {
			fe.Line = ProfileLine(pf.data, fe.Field)
		}
		return badf("%s: %v", pf.path, fe)
	}
	if errors.Is(err, ErrUnknownInterface) {
		field := "nic"
		if pf.NIC == "" {
			field = "nic_address"
		}
		return badf("%s: line %d: %s: %v", pf.path, ProfileLine(pf.data, field), field, err)
	}
	return err
}

// tool runs the actions on one host.
type tool struct {
	host Host
	out  io.Writer
	json bool
}

// report writes v as indented JSON, or as text.
func (t tool) report(v any, text func(io.Writer) error) error {
	if !t.json {
		return text(t.out)
	}
	enc := json.NewEncoder(t.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (t tool) plan(ctx context.Context, p Profile) error {
	pl, err := MakePlan(ctx, t.host, p)
	if err != nil {
		return err
	}
	return t.report(pl, pl.WriteText)
}

func (t tool) verify(ctx context.Context, p Profile) (drift bool, err error) {
	rep, err := Verify(ctx, t.host, p)
	if err != nil {
		return false, err
	}
	return !rep.OK, t.report(rep, rep.WriteText)
}

// apply saves the snapshot to path before the first change.
func (t tool) apply(ctx context.Context, p Profile, path string) error {
	pl, err := MakePlan(ctx, t.host, p)
	if err != nil {
		return err
	}
	_, rep, err := ApplyWith(ctx, t.host, p, func(s Snapshot) error { return WriteSnapshot(path, s) })
	if err != nil {
		return err
	}
	return t.report(struct {
		Snapshot string   `json:"snapshot"`
		Changes  []Change `json:"changes"`
		Report   Report   `json:"report"`
		Desired  Desired  `json:"desired"`
	}{path, pl.Changes, rep, pl.Desired}, func(w io.Writer) error {
		fmt.Fprintf(w, "applied %d change(s); snapshot saved to %s\n", len(pl.Changes), path)
		for _, c := range pl.Changes {
			fmt.Fprintf(w, "  %s\n", c)
		}
		return rep.WriteText(w)
	})
}

// revert restores the snapshot at path and checks the host equals it
// field for field.
func (t tool) revert(ctx context.Context, path string) error {
	if path == "" {
		return badf("--snapshot: missing (the file apply saved)")
	}
	snap, err := readSnapshot(path)
	if err != nil {
		return badf("--snapshot %s: %v", path, err)
	}
	rerr := Revert(ctx, t.host, snap)
	now, cerr := CaptureLike(ctx, t.host, snap)
	equal := cerr == nil && reflect.DeepEqual(now, snap.State)
	if t.json {
		res := struct {
			Snapshot string `json:"snapshot"`
			Restored bool   `json:"restored"`
			Error    string `json:"error,omitempty"`
			State    State  `json:"state"`
		}{Snapshot: path, Restored: rerr == nil && equal, State: now}
		if err := errors.Join(rerr, cerr); err != nil {
			res.Error = err.Error()
		}
		t.report(res, nil)
	}
	switch {
	case rerr != nil:
		return rerr
	case cerr != nil:
		return fmt.Errorf("read the host back: %w", cerr)
	case !equal:
		return fmt.Errorf("the host still differs from %s after revert", path)
	}
	if !t.json {
		fmt.Fprintf(t.out, "reverted to the snapshot taken %s (%s): the host matches it\n", snap.Taken.Format("2006-01-02 15:04:05 UTC"), path)
	}
	return nil
}

func readSnapshot(path string) (Snapshot, error) {
	var s Snapshot
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("not a tune snapshot: %w", err)
	}
	if s.Version != SnapshotVersion {
		return s, fmt.Errorf("snapshot version %d, this linerate reads version %d", s.Version, SnapshotVersion)
	}
	return s, nil
}

// WriteSnapshot keeps s at path, replaced whole: a crash leaves the old
// snapshot or the new one, never half of one.
func WriteSnapshot(path string, s Snapshot) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'))
}
