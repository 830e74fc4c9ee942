package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab/exitcode"
)

// What the flags name is read before anything runs, and each bad one is
// an error that names its flag.
func TestCheckNamesTheFlag(t *testing.T) {
	dir := t.TempDir()
	notSink := filepath.Join(dir, "valkey.json")
	if err := os.WriteFile(notSink, []byte(`{"server": {"name": "valkey", "version": "9.1.2"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	aFile := filepath.Join(dir, "file")
	if err := os.WriteFile(aFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	cases := []struct {
		name string
		b    BenchRun
		want []string // in the error; none: no error
	}{
		{"nothing asked", BenchRun{}, nil},
		{"start soon", BenchRun{StartAt: strconv.FormatInt(now.Add(time.Second).UnixNano(), 10)}, nil},
		{"start not a number", BenchRun{StartAt: "soon"}, []string{"--start-at", "Unix nanoseconds"}},
		{"start a day away", BenchRun{StartAt: strconv.FormatInt(now.Add(24*time.Hour).UnixNano(), 10)}, []string{"--start-at", "from now"}},
		{"ceiling missing", BenchRun{Ceiling: filepath.Join(dir, "none.json")}, []string{"--ceiling", "none.json"}},
		{"ceiling not a sink's", BenchRun{Ceiling: notSink}, []string{"--ceiling", "not against linerate sink"}},
		{"hgrm dir is a file", BenchRun{HgrmDir: filepath.Join(aFile, "hgrm")}, []string{"--hgrm-dir"}},
		{"hgrm dir made", BenchRun{HgrmDir: filepath.Join(dir, "new", "hgrm")}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.b.Check(now)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check passed, want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check: %v, want %q in it", err, w)
				}
			}
		})
	}
}

// Interrupted while it waits for --start-at, a bench ends 130 before it
// connects: nothing is written and nothing is printed.
func TestRunInterruptedBeforeTheStart(t *testing.T) {
	var out, errb bytes.Buffer
	b := BenchRun{StartAt: strconv.FormatInt(time.Now().Add(time.Minute).UnixNano(), 10), JSON: "-", Stdout: &out, Stderr: &errb}
	if err := b.Check(time.Now()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, err := b.Run(ctx)
	if code != exitcode.Interrupted || err == nil || !strings.Contains(err.Error(), "--start-at") || out.Len() != 0 || errb.Len() != 0 {
		t.Fatalf("code %d, err %v, stdout %q, stderr %q", code, err, out.String(), errb.String())
	}
}
