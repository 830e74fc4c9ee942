package engine_test

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/engine"
	"github.com/linerate/linerate/lab/exitcode"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/lab/labtest"
)

// Habits from other benchmarks that would make linerate do something
// nobody meant: each is refused before anything is written, with the figure.

func dbsize(t *testing.T, port int) int {
	t.Helper()
	out, err := exec.Command("redis-cli", "-p", strconv.Itoa(port), "DBSIZE").Output()
	if err != nil {
		t.Fatalf("redis-cli DBSIZE: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("DBSIZE said %q", out)
	}
	return n
}

func TestPrefillThatCannotFitIsRefusedBeforeWriting(t *testing.T) {
	t.Parallel()
	labtest.Need(t, "redis-cli")
	cases := []struct {
		name     string
		server   []string
		keys     int
		size     lab.Size
		want     []string // in the error
		wantNot  string
		refused  bool
		dbsizeOK int
	}{
		{name: "over maxmemory", server: []string{"--maxmemory", "8mb"}, keys: 20, size: 1 << 20, refused: true,
			want: []string{"--prefill", "20 keys", "20 MiB", "maxmemory", "8 MiB"}},
		// 100,000 keys of 64 MiB is 6.1 TiB, over the 1 GiB the host is
		// said to have free.
		{name: "over the host's free memory", keys: 100_000, size: 64 << 20, refused: true,
			want: []string{"--prefill", "100000 keys", "6.1 TiB", "free memory"}},
		{name: "fits", server: []string{"--maxmemory", "64mb"}, keys: 8, size: 1 << 20, dbsizeOK: 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := labtest.StartRedis(t, tc.server...)
			w := pacedWindow(shortWorkload(srv.Port), 50) // the prefill is judged, not the run's speed
			w.Prefill, w.Keyspace, w.ValueSz = true, tc.keys, lab.OneSize(tc.size)
			res, err := engine.Run(context.Background(), w, engine.Options{MemAvailable: func() (int64, error) { return 1 << 30, nil }})
			if !tc.refused {
				if err != nil {
					t.Fatalf("a prefill that fits was refused: %v", err)
				}
				if n := dbsize(t, srv.Port); n != tc.dbsizeOK {
					t.Fatalf("DBSIZE %d after the prefill, want %d", n, tc.dbsizeOK)
				}
				return
			}
			var fe *fields.FieldError
			if !errors.As(err, &fe) || fe.Field != "--prefill" {
				t.Fatalf("error %v, want a --prefill field error", err)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
			if res == nil || res.Stop.ExitCode != exitcode.SetupFailed {
				t.Fatalf("record %+v", res)
			}
			if n := dbsize(t, srv.Port); n != 0 {
				t.Fatalf("DBSIZE %d: the prefill wrote before it was refused", n)
			}
		})
	}
}
