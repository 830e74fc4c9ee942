package tuning

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Do refuses what the operator got wrong as *InputError, naming the flag
// or the file and line, before it changes anything.
func TestDoRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "p.yaml")
	unknownNIC := filepath.Join(dir, "nic.yaml")
	snap := filepath.Join(dir, "snap.json")
	for path, text := range map[string]string{prof: "nic: ens50\n", unknownNIC: "# a comment\nnic: nosuch0\n", snap: "{}"} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root := fixtures["graviton"]
	for _, tc := range []struct {
		r    Request
		want string
	}{
		{Request{Action: "frob", Root: root}, "unknown action"},
		{Request{Action: "plan", Root: ""}, "--root: empty"},
		{Request{Action: "plan", Root: filepath.Join(dir, "nosuch")}, "not a directory"},
		{Request{Action: "plan", Root: root}, "--profile: missing"},
		{Request{Action: "plan", Root: root, Profile: prof, Snapshot: snap}, "--snapshot: plan changes nothing"},
		{Request{Action: "verify", Root: root, Profile: prof, Snapshot: snap}, "--snapshot: verify compares"},
		{Request{Action: "apply", Root: root, Profile: prof}, "--snapshot: missing"},
		{Request{Action: "apply", Root: root, Profile: prof, Snapshot: snap}, "exists; revert it first"},
		{Request{Action: "plan", Root: root, Profile: unknownNIC}, "nic.yaml: line 2: nic: "},
		{Request{Action: "revert", Root: root, Profile: prof, Snapshot: snap}, "takes no profile"},
		{Request{Action: "revert", Root: root}, "--snapshot: missing"},
		{Request{Action: "revert", Root: root, Snapshot: snap}, "snapshot version 0"},
	} {
		t.Run(tc.r.Action+" "+tc.want, func(t *testing.T) {
			var out, log bytes.Buffer
			_, err := Do(context.Background(), tc.r, &out, &log)
			var in *InputError
			if !errors.As(err, &in) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want an *InputError containing %q", err, tc.want)
			}
			if out.Len() > 0 {
				t.Errorf("printed %q on bad input", out.String())
			}
		})
	}
}

// apply saves the snapshot before it changes anything, verify then finds
// no drift, revert restores the host; the .txtar copy is gone after.
func TestDoApplyVerifyRevert(t *testing.T) {
	_, root := fixtureHost(t, "graviton")
	prof := filepath.Join("profiles", "study-c8gn.yaml")
	snap := filepath.Join(t.TempDir(), "snap.json")
	ctx := context.Background()
	run := func(r Request) (string, bool) {
		t.Helper()
		var out, log bytes.Buffer
		r.Root = root
		drift, err := Do(ctx, r, &out, &log)
		if err != nil {
			t.Fatalf("%s: %v", r.Action, err)
		}
		return out.String(), drift
	}
	if _, drift := run(Request{Action: "verify", Profile: prof}); !drift {
		t.Fatal("verify before apply: no drift on an untuned host")
	}
	out, _ := run(Request{Action: "apply", Profile: prof, Snapshot: snap, JSON: true})
	var applied struct{ Snapshot string }
	if err := json.Unmarshal([]byte(out), &applied); err != nil || applied.Snapshot != snap {
		t.Fatalf("apply --json printed %q (%v)", out, err)
	}
	if _, drift := run(Request{Action: "verify", Profile: prof}); drift {
		t.Fatal("verify after apply: drift")
	}
	if out, _ := run(Request{Action: "revert", Snapshot: snap}); !strings.Contains(out, "the host matches it") {
		t.Fatalf("revert printed %q", out)
	}
	if _, drift := run(Request{Action: "verify", Profile: prof}); !drift {
		t.Fatal("verify after revert: no drift, so revert changed nothing")
	}
}
