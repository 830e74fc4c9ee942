package sweeps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
)

// A value out of bounds reads the same from a campaign and from a bench
// flag: both meet lab's one rule for the field, the campaign at the
// value's line and column.
func TestCampaignAndFlagsShareBounds(t *testing.T) {
	for _, tc := range []struct {
		field, value string // as the campaign lists it
		flags        []string
	}{
		{"pipeline", "2000", []string{"-P", "2000"}},
		{"pipeline", "-1", []string{"-P", "-1"}}, // (a 0 flag means "the default")
		{"connections", "100000", []string{"-c", "100000"}},
		{"threads", "5000", []string{"-t", "5000", "-c", "5000"}},
		{"keyspace", "5000000000", []string{"-n", "5000000000", "--key-size", "20"}},
		{"key-size", "600", []string{"--key-size", "600"}},
		{"value-size", "5GiB", []string{"-s", "5GiB"}},
		{"duration", "25h", []string{"-d", "25h"}},
		{"warmup", "-1s", []string{"--warmup", "-1s"}},
		{"request-timeout", "2h", []string{"--request-timeout", "2h"}},
		{"engine", "turbo", []string{"--engine", "turbo"}},
		{"value-size", "1MiB:60,1MiB:40", []string{"-s", "1MiB:60,1MiB:40"}},
		{"rate", "0", []string{"--rate", "0"}},
		{"ramp", "50:800:1:10s", []string{"--ramp", "50:800:1:10s"}},
		{"arrival", "bursty", []string{"--arrival", "bursty"}},
		{"queue-limit", "2h", []string{"--queue-limit", "2h"}},
		{"probe", "100B@0", []string{"--probe", "100B@0"}},
		{"command", "hgetall", []string{"--command", "hgetall"}},
		{"keys-per-op", "2000", []string{"--keys-per-op", "2000"}},
	} {
		t.Run(tc.field+"="+tc.value, func(t *testing.T) {
			var w lab.Workload
			fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
			fields.BindFlags(fs, &w)
			// A value the flag's own parser refuses (a value-size mix
			// checks its bounds as it reads) is read by the same parser
			// in a campaign: the messages match all the same.
			var why string
			if err := fs.Parse(tc.flags); err != nil {
				_, after, found := strings.Cut(err.Error(), " flag: ")
				if !found || !strings.Contains(err.Error(), "--"+tc.field) {
					t.Fatalf("flags %v: %v, want an error naming --%s", tc.flags, err, tc.field)
				}
				why = after
			} else {
				var fe *fields.FieldError
				if err := fields.Validate(w.Resolve()); !errors.As(err, &fe) || fe.Name() != tc.field {
					t.Fatalf("flags %v: %v, want an error naming --%s", tc.flags, err, tc.field)
				}
				why = fe.Msg
			}
			spec := "name: t\nversions:\n  - store: valkey@9.1\nworkload:\n  " + tc.field + ": " + tc.value + "\n"
			_, err := ParseCampaign("t.yaml", []byte(spec))
			want := fmt.Sprintf("t.yaml:5:%d: workload.%s: %s", len(tc.field)+5, tc.field, why)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("campaign %s: %s:\n%v\nwant %q", tc.field, tc.value, err, want)
			}
		})
	}
}

// Key distributions name their cells by a segment that is safe in a file
// name: no ":" and no "," (gaussian:0.5,0.1), and two values never share
// a segment.
func TestKeyDistSegments(t *testing.T) {
	spec := "name: t\nversions:\n  - store: valkey@9.1\nworkload:\n  key-dist: [uniform, \"zipf:0.9\", \"zipf:1.4\", \"gaussian:0.5,0.1\", \"gaussian:0.5,0.01\"]\n"
	c, err := ParseCampaign("t.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"uniform", "zipf0.9", "zipf1.4", "gaussian0.5-0.1", "gaussian0.5-0.01"}
	if len(p.Cells) != len(want) {
		t.Fatalf("%d cells, want %d", len(p.Cells), len(want))
	}
	for i, c := range p.Cells {
		if strings.ContainsAny(c.ID, ":,") || !strings.Contains(c.ID, "/"+want[i]+"/") {
			t.Errorf("cell %d: ID %q, want the segment %q and no : or ,", i, c.ID, want[i])
		}
	}
}
