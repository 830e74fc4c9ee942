package tuning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/linerate/linerate/lab/atomicfile"
)

// SnapshotFile is the name of the snapshot a Tuner keeps in its state
// directory from before its first change until its revert.
const SnapshotFile = "tuning-snapshot.json"

// Tuner applies a campaign's tuning profile to a host for the length of a
// run, checks it before each cell (sweeps.TuningCheck) and reverts it. The
// local provider and every agent tune through it.
type Tuner struct {
	Host    Host
	Profile Profile
	// Log hears what became of a snapshot an earlier run left; nil is
	// silent.
	Log func(format string, args ...any)

	snap *Snapshot
	file string // the snapshot kept on disk until Revert
}

// LoadProfile finds a campaign's profile: NAME is a file path, or a name
// looked up as DIR/NAME.yaml.
func LoadProfile(name, dir string) (Profile, string, error) {
	path := name
	if !strings.ContainsAny(name, `/\`) && !strings.HasSuffix(name, ".yaml") {
		path = filepath.Join(dir, name+".yaml")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Profile{}, path, fmt.Errorf("tuning profile %q: %w", name, err)
	}
	p, err := ParseProfile(data)
	if err != nil {
		return Profile{}, path, fmt.Errorf("%s: %w", path, err)
	}
	return p, path, nil
}

// Apply tunes the host and returns the snapshot for the environment
// record. With a state directory, the snapshot is kept there
// (SnapshotFile) from before the first change until Revert, so a run that
// dies tuned leaves the way back; one an earlier run left there is
// reverted first, as a snapshot taken over tuned values would make them
// the ones a revert restores. "" keeps nothing on disk.
func (t *Tuner) Apply(ctx context.Context, stateDir string) (json.RawMessage, error) {
	t.file = ""
	save := func(Snapshot) error { return nil }
	if stateDir != "" {
		t.file = filepath.Join(stateDir, SnapshotFile)
		if err := revertLeftover(ctx, t.Host, t.file, t.Log); err != nil {
			return nil, err
		}
		save = func(s Snapshot) error {
			b, err := json.Marshal(s)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(stateDir, 0o755); err != nil {
				return err
			}
			return atomicfile.Write(t.file, b)
		}
	}
	snap, rep, err := ApplyWith(ctx, t.Host, t.Profile, save)
	if err != nil {
		// Apply rolled back; the file goes only if the host is back to it.
		if t.file != "" && snap.Version != 0 {
			if now, cerr := CaptureLike(context.WithoutCancel(ctx), t.Host, snap); cerr == nil && reflect.DeepEqual(now, snap.State) {
				os.Remove(t.file)
			}
		}
		return nil, fmt.Errorf("apply tuning profile: %w", err)
	}
	t.snap = &snap
	if !rep.OK {
		return nil, errors.Join(fmt.Errorf("tuning applied but the host does not match the profile (%d drifts)", len(rep.Drifts)), t.Revert(ctx))
	}
	return json.Marshal(snap)
}

// Verify implements sweeps.TuningCheck.
func (t *Tuner) Verify(ctx context.Context) (json.RawMessage, int, error) {
	rep, err := Verify(ctx, t.Host, t.Profile)
	if err != nil {
		return nil, 0, err
	}
	b, err := json.Marshal(rep)
	return b, len(rep.Drifts), err
}

// Revert restores what Apply changed and drops the kept snapshot; without
// an Apply it does nothing. On failure the snapshot stays for the next run
// (or `linerate tune revert --snapshot`).
func (t *Tuner) Revert(ctx context.Context) error {
	if t.snap == nil {
		return nil
	}
	if err := Revert(ctx, t.Host, *t.snap); err != nil {
		return fmt.Errorf("revert tuning: %w", err)
	}
	t.snap = nil
	if t.file != "" {
		if err := os.Remove(t.file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("revert tuning: the host is reverted, but %w", err)
		}
	}
	return nil
}

// revertLeftover restores the snapshot an earlier run left at path (it
// was killed before it could revert, or an agent whose connection is half
// open has not noticed yet), then removes it. A snapshot from before the
// host's last boot is dropped, not reverted: the reboot reset what it
// changed (and may have renumbered the IRQs), and restoring it now would
// undo the operator's settings.
func revertLeftover(ctx context.Context, h Host, path string, log func(string, ...any)) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("leftover tuning snapshot: %w", err)
	}
	var snap Snapshot
	if err := json.Unmarshal(b, &snap); err != nil || snap.Version != SnapshotVersion {
		if err == nil {
			err = fmt.Errorf("version %d, this linerate reads version %d", snap.Version, SnapshotVersion)
		}
		return fmt.Errorf("leftover tuning snapshot %s: %w (revert by hand: linerate tune revert --snapshot %s, then delete it)", path, err, path)
	}
	if log == nil {
		log = func(string, ...any) {}
	}
	if boot, ok := bootTime(h.FS); ok && snap.Taken.Before(boot) {
		log("tuning: %s predates the last boot; dropped, not reverted", path)
		return os.Remove(path)
	}
	if err := Revert(ctx, h, snap); err != nil {
		return fmt.Errorf("revert the leftover tuning snapshot %s: %w (if the host was reconfigured since, delete it)", path, err)
	}
	log("tuning: reverted the tuning an earlier run left (%s)", path)
	return os.Remove(path)
}

// bootTime is when the host last booted; false when its root does not
// say (a fixture tree without /proc/stat). An FS reads it through
// the kernel.FS it is or wraps (kernel.FS.BootTime).
func bootTime(f FS) (time.Time, bool) {
	k, ok := f.(interface{ BootTime() (time.Time, error) })
	if !ok {
		return time.Time{}, false
	}
	t, err := k.BootTime()
	return t, err == nil
}
