package sweeps

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab/fields"
)

// --command in a campaign: mget and mset cells are named MGET and MSET in
// the op segment (get and set are the ratio's GET and SET), prefill auto
// prefills the cells that read (a campaign naming no op reads: GET is the
// default), keys-per-op names cells only when it varies, and the bench is
// started with the flags.
func TestCommandCells(t *testing.T) {
	for _, tc := range []struct {
		workload string
		ids      []string
		prefill  []bool
	}{
		{"  command: [get, set, mget, mset]\n",
			[]string{"valkey@9.1/GET/1MiB/r1", "valkey@9.1/SET/1MiB/r1", "valkey@9.1/MGET/1MiB/r1", "valkey@9.1/MSET/1MiB/r1"},
			[]bool{true, false, true, false}},
		{"  command: mget\n  keys-per-op: [2, 10]\n  prefill: auto\n",
			[]string{"valkey@9.1/MGET/1MiB/keys2/r1", "valkey@9.1/MGET/1MiB/keys10/r1"},
			[]bool{true, true}},
		{"  ratio: SET\n  command: mset\n  keys-per-op: 4\n",
			[]string{"valkey@9.1/MSET/1MiB/r1"}, []bool{false}},
		{"", []string{"valkey@9.1/GET/1MiB/r1"}, []bool{true}},
		{"  prefill: auto\n", []string{"valkey@9.1/GET/1MiB/r1"}, []bool{true}},
		{"  prefill: false\n", []string{"valkey@9.1/GET/1MiB/r1"}, []bool{false}},
		{"  ratio: SET\n", []string{"valkey@9.1/SET/1MiB/r1"}, []bool{false}},
	} {
		spec := "name: t\nversions:\n  - store: valkey@9.1\nworkload:\n  value-size: 1MiB\n" + tc.workload
		c, err := ParseCampaign("t.yaml", []byte(spec))
		if err != nil {
			t.Fatalf("%s: %v", tc.workload, err)
		}
		p, err := NewPlan(context.Background(), c, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.workload, err)
		}
		var ids []string
		var prefill []bool
		for _, cell := range p.Cells {
			ids = append(ids, cell.ID)
			prefill = append(prefill, cell.Workload.Prefill)
			args := strings.Join(fields.Args(cell.Workload), " ")
			if cmd := cell.Workload.Command; cmd != "" && !strings.Contains(args, "--command "+string(cmd)) {
				t.Errorf("%s: bench args %q lack --command", cell.ID, args)
			}
		}
		if !slices.Equal(ids, tc.ids) || !slices.Equal(prefill, tc.prefill) {
			t.Errorf("%s: cells %v prefill %v, want %v %v", tc.workload, ids, prefill, tc.ids, tc.prefill)
		}
	}
}

// A combination the bench refuses is refused at the campaign's line.
func TestCommandCombinationsRefusedAtTheirLine(t *testing.T) {
	for _, tc := range []struct{ workload, want string }{
		{"  ratio: [GET, SET]\n  command: mget\n", "t.yaml:6:12: workload.command: mget issues no SET, but -r 0:100 asks for SETs; leave -r out (in the cell with ratio=0:100 command=mget)"},
		{"  command: mget\n  keys-per-op: 0.5\n", "t.yaml:6:16: workload.keys-per-op: want a whole number"},
		{"  command: get\n  keys-per-op: 10\n", "t.yaml:6:16: workload.keys-per-op: 10 keys per request needs --command mget or mset"},
		{"  command: mget\n  rate: 100\n", "t.yaml:5:12: workload.command: mget is closed loop only"},
		{"  command: multi\n", "t.yaml:5:12: workload.command: \"multi\": use get, set"},
	} {
		spec := "name: t\nversions:\n  - store: valkey@9.1\nworkload:\n" + tc.workload
		_, err := ParseCampaign("t.yaml", []byte(spec))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %q", tc.workload, err, tc.want)
		}
	}
}
