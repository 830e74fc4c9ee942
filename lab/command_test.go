package lab_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
)

// benchFlags reads a bench command line as the CLI does: BindFlags,
// FinishFlags, Resolve, Validate.
func benchFlags(args ...string) (lab.Workload, error) {
	var w lab.Workload
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	fields.BindFlags(fs, &w)
	if err := fs.Parse(args); err != nil {
		return w, err
	}
	if err := fields.FinishFlags(fs, &w); err != nil {
		return w, err
	}
	r := w.Resolve()
	return r, fields.Validate(r)
}

// --command and --keys-per-op: what each line runs, and a line that makes
// no sense is one error naming the flag.
func TestCommandFlags(t *testing.T) {
	for _, tc := range []struct {
		args    string
		ops     []lab.Op
		keys    int
		badFlag string // the error's field, "" when accepted
		says    string // and a word of its message
	}{
		{"", []lab.Op{lab.OpGet}, 0, "", ""},
		{"--command get", []lab.Op{lab.OpGet}, 0, "", ""},
		{"--command set", []lab.Op{lab.OpSet}, 0, "", ""},
		{"--command mget", []lab.Op{lab.OpMGet}, lab.DefaultKeysPerOp, "", ""},
		{"--command mset --keys-per-op 3", []lab.Op{lab.OpMSet}, 3, "", ""},
		{"--command mset -r 0:1", []lab.Op{lab.OpMSet}, lab.DefaultKeysPerOp, "", ""},
		{"--command mget -r 90:10", nil, 0, "--command", "-r 90:10"},
		{"--command mset -r 100:0", nil, 0, "--command", "leave -r out"},
		{"--command set -r 1:1", nil, 0, "--command", "GET"},
		{"--command hgetall", nil, 0, "command", "mget"},
		{"--command mget --keys-per-op 0", nil, 0, "--keys-per-op", "positive"},
		{"--command mget --keys-per-op 1025", nil, 0, "--keys-per-op", "1-1024"},
		{"--command mget --keys-per-op -1", nil, 0, "--keys-per-op", "1-1024"},
		{"--keys-per-op 4", nil, 0, "--keys-per-op", "--command mget or mset"},
		{"--command get --keys-per-op 4", nil, 0, "--keys-per-op", "--command mget or mset"},
		{"--command mget --keys-per-op 20 -n 10", nil, 0, "--keys-per-op", "distinct"},
		{"--command mget --keys-per-op 1024 -n 2000 -c 1024 -P 2 -t 1", nil, 0, "--keys-per-op", "keys in flight"},
		{"--command mset --keys-per-op 100 -s 64MiB", nil, 0, "--keys-per-op", "4GiB"},
		{"--command mget --engine valkey-go", nil, 0, "--command", "raw engine"},
		{"--command mget --rate 100", nil, 0, "--command", "closed loop"},
		{"--command mget --probe 100B@100 --warmup 2s", nil, 0, "--command", "--probe"},
		{"--command mget -s 1MiB:1,2MiB:1", nil, 0, "--command", "one value size"},
		{"--command mget --cluster", nil, 0, "--command", "span slots"},
		{"--command get --rate 100", []lab.Op{lab.OpGet}, 0, "", ""},
	} {
		w, err := benchFlags(strings.Fields(tc.args)...)
		if tc.badFlag == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.args, err)
				continue
			}
			if !reflect.DeepEqual(w.Ops(), tc.ops) || w.KeysPerOp != tc.keys {
				t.Errorf("%q: ops %v, %d keys per op; want %v, %d", tc.args, w.Ops(), w.KeysPerOp, tc.ops, tc.keys)
			}
			// Args renders it back to the same workload (the sweeps runner).
			back, err := benchFlags(fields.Args(w)...)
			if err != nil || back.Command != w.Command || back.KeysPerOp != w.KeysPerOp || back.Ratio != w.Ratio {
				t.Errorf("%q: Args %v reads back as %+v (%v)", tc.args, fields.Args(w), back, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%q accepted, want an error naming %s", tc.args, tc.badFlag)
			continue
		}
		if !strings.Contains(err.Error(), tc.badFlag) || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v; want one line naming %s and saying %q", tc.args, err, tc.badFlag, tc.says)
		}
	}
}

// A workload without --command stores no command or keys per op: records
// and cell hashes of runs before the flag read the same.
func TestNoCommandLeavesTheRecordAsItWas(t *testing.T) {
	b, err := json.Marshal(lab.Workload{}.Resolve())
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "command") || strings.Contains(s, "keys_per_op") {
		t.Errorf("default workload JSON names the command: %s", s)
	}
	b, _ = json.Marshal(lab.Workload{Command: lab.CommandMGet}.Resolve())
	if s := string(b); !strings.Contains(s, `"command":"mget"`) || !strings.Contains(s, `"keys_per_op":10`) {
		t.Errorf("mget workload JSON: %s", s)
	}
}

// --cluster is refused beside what cannot follow a key to its node, with
// one error naming the flag.
func TestClusterFlags(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"--cluster", ""},
		{"--cluster --engine valkey-go", "raw engine"},
		{"--cluster --probe 100B@100 --warmup 2s", "--probe"},
		{"--cluster --tls --tls-insecure", "--tls"},
		{"--cluster --command mget", "span slots"},
	} {
		_, err := benchFlags(strings.Fields(tc.args)...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}
