package sweeps

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/lab/fields"
)

const clusterSpec = `name: t
versions:
  - store: valkey@9.1
  - {store: valkey@8.1, label: plain}
server:
  cluster: 3
workload:
  ratio: [GET, SET]
  value-size: 1MiB
  connections: 6
  keyspace: 30
  key-size: 16
`

// server.cluster: a version with it runs every cell with --cluster, one
// without (cluster given per version) does not; bad values and what a
// cluster cannot be combined with fail at plan time at their line.
func TestCampaignCluster(t *testing.T) {
	c, err := ParseCampaign("t.yaml", []byte(strings.Replace(clusterSpec, "  - {store: valkey@8.1, label: plain}\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Versions[0].Server.Cluster != 3 {
		t.Fatalf("version settings %+v", c.Versions[0].Server)
	}
	p, err := c.cellsOf(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cell := range p.Cells {
		if !cell.Workload.Cluster || !strings.Contains(strings.Join(fields.Args(cell.Workload), " "), "--cluster") {
			t.Errorf("%s: not a cluster cell: %v", cell.ID, fields.Args(cell.Workload))
		}
	}
	// Per version: only the version that says so is a cluster.
	perVersion := strings.Replace(strings.Replace(clusterSpec, "server:\n  cluster: 3\n", "", 1),
		"  - store: valkey@9.1\n", "  - {store: valkey@9.1, cluster: 2}\n", 1)
	c, err = ParseCampaign("t.yaml", []byte(perVersion))
	if err != nil {
		t.Fatal(err)
	}
	if p, err = c.cellsOf(nil); err != nil {
		t.Fatal(err)
	}
	for _, cell := range p.Cells {
		if want := cell.Version == 0; cell.Workload.Cluster != want {
			t.Errorf("%s: cluster %v, want %v", cell.ID, cell.Workload.Cluster, want)
		}
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"zero", "cluster: 3", "cluster: 0", "t.yaml:6:12: server.cluster: 0 is outside 1-16"},
		{"above 16", "cluster: 3", "cluster: 17", "t.yaml:6:12: server.cluster: 17 is outside 1-16"},
		{"not a number", "cluster: 3", "cluster: yes", "t.yaml:6:12: server.cluster: want a whole number"},
		{"fewer cpus", "cluster: 3", "{cluster: 3, cpus: 0-1}", "t.yaml:6:13: server.cluster: 3 nodes on cpus 0-1 (2 CPUs)"},
		{"version cpus too few", "- {store: valkey@8.1, label: plain}", "- {store: valkey@8.1, label: plain, cpus: \"0\"}", "t.yaml:6:12: server.cluster: 3 nodes on cpus 0 (1 CPUs): each node is pinned to a CPU of its own; give versions[1].cpus"},
		{"image", "- {store: valkey@8.1, label: plain}", "- image: valkey/valkey:8.1.1", "t.yaml:6:12: server.cluster: a cluster's nodes are local processes"},
		{"tls", "cluster: 3", "{cluster: 3, tls: true}", "t.yaml:6:13: server.cluster: not with tls"},
		{"args the launcher sets", "cluster: 3", "{cluster: 3, args: [--cluster-enabled, \"yes\"]}", "t.yaml:6:13: server.cluster: args --cluster-enabled: the launcher sets it"},
		{"a connection per node", "connections: 6", "connections: 2", "t.yaml:10:16: workload.connections: 2 connections for a cluster of 3 nodes (server.cluster) from 1 client host(s)"},
		{"a key per node", "keyspace: 30", "keyspace: 2", "t.yaml:11:13: workload.keyspace: 2 keys for a cluster of 3 nodes"},
		{"no room for the tag", "key-size: 16", "key-size: 8", "t.yaml:12:13: workload.key-size: --key-size 8 leaves no room for the hash tag"},
		{"valkey-go", "key-size: 16", "key-size: 16\n  engine: valkey-go", "only the raw engine routes by slot; use --engine raw (server.cluster runs the bench with --cluster)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCampaign("t.yaml", []byte(strings.Replace(clusterSpec, tc.old, tc.new, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
			if n := strings.Count(err.Error(), tc.want); n != 1 {
				t.Errorf("said %d times: %v", n, err)
			}
		})
	}
}
