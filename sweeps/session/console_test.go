package session

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
)

// What the operator gives is checked before anything starts: each error
// is an *InputError naming the flag.
func TestOperatorInputRefused(t *testing.T) {
	ok := RunOptions{MaxAttempts: 3}
	run := t.TempDir()
	if err := os.MkdirAll(filepath.Join(run, "cells"), 0o755); err != nil {
		t.Fatal(err)
	}
	tbl := Default()
	up := func(f UpFlags) error {
		_, err := tbl.UpFromFlags(context.Background(), f, &Operator{})
		return err
	}
	spec := infra.Spec{Campaign: "c", Dir: t.TempDir()}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"attempts", RunOptions{MaxAttempts: 0}.Check(), "--max-attempts 0: use 1-100"},
		{"link", RunOptions{MaxAttempts: 1, LinkGbps: math.NaN()}.Check(), "--link-gbps NaN"},
		{"only", RunOptions{MaxAttempts: 1, Only: "["}.Check(), `--only "["`},
		{"soak short", load(tbl, run, SoakOptions{Cell: "x", Duration: time.Second}), "--duration 1s: use 10s to 24h0m0s"},
		{"soak cell", load(tbl, run, SoakOptions{Cell: "x", Duration: time.Minute}), "--cell: "},
		{"soak dir", load(tbl, filepath.Join(run, "nosuch"), SoakOptions{Cell: "x", Duration: time.Minute}), "nosuch"},
		{"ssh-from", func() error { _, err := ParseSSHFrom("here"); return err }(), `--ssh-from "here": want a CIDR`},
		{"up campaign", up(UpFlags{Kind: "local"}), "up: --campaign is required"},
		{"up queues", up(UpFlags{Kind: "local", Spec: infra.Spec{Campaign: "c", Queues: -1}}), "up: --queues: -1"},
		{"up ssh", up(UpFlags{Kind: "ssh", Spec: spec}), "up: the ssh provider needs --server, --client and --key"},
		{"up kind", up(UpFlags{Kind: "docker", Spec: spec}), `up: --provider "docker"`},
		{"up ssh-from", up(UpFlags{Kind: "local", Spec: spec, SSHFrom: "x"}), `up: --ssh-from "x"`},
		{"down", func() error { _, err := tbl.Down(context.Background(), spec.Dir, "", &Operator{}); return err }(), "down: --campaign is required"},
	} {
		var in *InputError
		if !errors.As(tc.err, &in) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want an *InputError containing %q", tc.name, tc.err, tc.want)
		}
	}
	if err := ok.Check(); err != nil {
		t.Errorf("%+v: %v", ok, err)
	}
}

func load(t *Table, dir string, o SoakOptions) error {
	_, err := t.LoadSoak(dir, o)
	return err
}

// The console operator launches on y or yes only, and without asking
// with yes given; the cost is shown either way.
func TestConsoleConfirm(t *testing.T) {
	for _, tc := range []struct {
		answer string
		yes    bool
		want   bool
	}{
		{"y\n", false, true}, {"YES\n", false, true}, {"\n", false, false}, {"no\n", false, false}, {"", false, false}, {"", true, true},
	} {
		var op Operator
		var out bytes.Buffer
		op.Console(strings.NewReader(tc.answer), &out, tc.yes)
		if got := op.Confirm("2 x c8gn: $7/h\n"); got != tc.want {
			t.Errorf("answer %q, yes %v: launch %v, want %v", tc.answer, tc.yes, got, tc.want)
		}
		if !strings.HasPrefix(out.String(), "2 x c8gn: $7/h\n") || strings.Contains(out.String(), "Launch?") == tc.yes {
			t.Errorf("answer %q, yes %v: printed %q", tc.answer, tc.yes, out.String())
		}
	}
}

// RunDir is runs/NAME unless given.
func TestRunDir(t *testing.T) {
	for _, tc := range [][3]string{{"", "c", "runs/c"}, {"d", "c", "d"}, {"", "", ""}} {
		if got := RunDir(tc[0], tc[1]); got != tc[2] {
			t.Errorf("RunDir(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}

// A failure whose teardown left something ends with the line that says
// how it is found later; other failures, and none, stay as they are.
func TestWithLeft(t *testing.T) {
	errLeft := errors.New("teardown failed")
	tbl := NewTable(&Row{Kind: "k", Left: func(err error) string {
		if errors.Is(err, errLeft) {
			return "infra gc finds it"
		}
		return ""
	}})
	for _, tc := range []struct {
		kind string
		err  error
		want string
	}{
		{"k", errLeft, "teardown failed\ninfra gc finds it"},
		{"k", errors.New("other"), "other"},
		{"none", errLeft, "teardown failed"},
	} {
		got := tbl.withLeft(tc.kind, tc.err)
		if got == nil || got.Error() != tc.want || !errors.Is(got, tc.err) {
			t.Errorf("withLeft(%s, %v) = %v, want %q wrapping it", tc.kind, tc.err, got, tc.want)
		}
	}
	if err := tbl.withLeft("k", nil); err != nil {
		t.Errorf("withLeft of no error: %v", err)
	}
}
