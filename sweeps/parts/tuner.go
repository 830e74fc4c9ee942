package parts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/linerate/linerate/tuning"
)

// Tuner applies a campaign's tuning profile to a host for the length of a
// run, checks it before each cell (sweeps.TuningCheck) and reverts it.
type Tuner struct {
	Host    tuning.Host
	Profile tuning.Profile
	snap    *tuning.Snapshot
}

// LoadProfile finds a campaign's profile: NAME is a file path, or a name
// looked up as DIR/NAME.yaml.
func LoadProfile(name, dir string) (tuning.Profile, string, error) {
	path := name
	if !strings.ContainsAny(name, `/\`) && !strings.HasSuffix(name, ".yaml") {
		path = filepath.Join(dir, name+".yaml")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return tuning.Profile{}, path, fmt.Errorf("tuning profile %q: %w", name, err)
	}
	p, err := tuning.ParseProfile(data)
	if err != nil {
		return tuning.Profile{}, path, fmt.Errorf("%s: %w", path, err)
	}
	return p, path, nil
}

// Apply tunes the host, saving the snapshot with save before the first
// change, and returns the snapshot for the environment record.
func (t *Tuner) Apply(ctx context.Context, save func(json.RawMessage) error) (json.RawMessage, error) {
	snap, rep, err := tuning.ApplyWith(ctx, t.Host, t.Profile, func(s tuning.Snapshot) error {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		return save(b)
	})
	if err != nil {
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
	rep, err := tuning.Verify(ctx, t.Host, t.Profile)
	if err != nil {
		return nil, 0, err
	}
	b, err := json.Marshal(rep)
	return b, len(rep.Drifts), err
}

// Revert restores what Apply changed; without an Apply it does nothing.
func (t *Tuner) Revert(ctx context.Context) error {
	if t.snap == nil {
		return nil
	}
	if err := tuning.Revert(ctx, t.Host, *t.snap); err != nil {
		return fmt.Errorf("revert tuning: %w", err)
	}
	t.snap = nil
	return nil
}
