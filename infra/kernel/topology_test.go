package kernel

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/linerate/linerate/lab/cpus"
)

// Two cores of two threads each, on two NUMA nodes, the second core on
// package 1; a CPU list written out of order comes back ascending.
func TestReadTopology(t *testing.T) {
	root := t.TempDir()
	for name, v := range map[string]string{
		"sys/devices/system/cpu/online":                             "0-3\n",
		"sys/devices/system/cpu/cpu0/topology/thread_siblings_list": "2,0\n",
		"sys/devices/system/cpu/cpu1/topology/thread_siblings_list": "1,3\n",
		"sys/devices/system/cpu/cpu1/topology/physical_package_id":  "1\n",
		"sys/devices/system/node/node0/cpulist":                     "0,2\n",
		"sys/devices/system/node/node1/cpulist":                     "1,3\n",
		"sys/devices/system/node/has_cpu":                           "0-1\n",
		"sys/devices/system/cpu/cpu2/topology/thread_siblings_list": "0,2\n",
		"sys/devices/system/cpu/cpu3/topology/thread_siblings_list": "1,3\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadTopology(FS{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	want := Topology{
		CPUs: cpus.List{0, 1, 2, 3},
		Cores: []Core{
			{ID: 0, Package: 0, Node: 0, CPUs: cpus.List{0, 2}},
			{ID: 1, Package: 1, Node: 1, CPUs: cpus.List{1, 3}},
		},
		Nodes: map[int]cpus.List{0: {0, 2}, 1: {1, 3}},
		SMT:   true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("topology\n got %+v\nwant %+v", got, want)
	}
	if c := got.CoreOf(3); c == nil || c.ID != 1 {
		t.Errorf("CoreOf(3) = %+v", c)
	}
	if ids := got.NodeIDs(); !reflect.DeepEqual(ids, []int{0, 1}) {
		t.Errorf("NodeIDs %v", ids)
	}
	if _, err := ReadTopology(FS{Root: t.TempDir()}); err == nil {
		t.Error("a root without /sys/devices/system/cpu/online read")
	}
}
