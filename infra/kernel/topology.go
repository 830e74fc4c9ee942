package kernel

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/lab/cpus"
)

// Reader is what ReadTopology needs of a file tree: an FS, or another view
// of one (tuning's fixture host, a network namespace's).
type Reader interface {
	ReadFile(name string) ([]byte, error)
	ReadDir(name string) ([]string, error)
}

// ReadValue reads a one-value file from f and trims the trailing newline.
func ReadValue(f Reader, name string) (string, error) {
	b, err := f.ReadFile(name)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// cpuSet reads a CPU list as a set, ascending.
func cpuSet(s string) (cpus.List, error) {
	l, err := cpus.Parse(s)
	return l.Sorted(), err
}

// Core is one physical core: the CPUs (hardware threads) that share it. On a
// host without SMT (Graviton) every core has one CPU.
type Core struct {
	ID      int       `json:"id"`      // index in Topology.Cores, not the kernel's core_id
	Package int       `json:"package"` // physical_package_id
	Node    int       `json:"node"`    // NUMA node
	CPUs    cpus.List `json:"cpus"`
}

// Topology is what tuning's derivation needs to know about the host's
// processors.
type Topology struct {
	CPUs  cpus.List         `json:"cpus"` // online CPUs
	Cores []Core            `json:"cores"`
	Nodes map[int]cpus.List `json:"nodes"` // NUMA node → online CPUs
	SMT   bool              `json:"smt"`   // some core has more than one CPU
}

// ReadTopology reads /sys/devices/system/cpu and /sys/devices/system/node.
func ReadTopology(f Reader) (Topology, error) {
	var t Topology
	online, err := ReadValue(f, "/sys/devices/system/cpu/online")
	if err != nil {
		return t, fmt.Errorf("read online CPUs: %w", err)
	}
	if t.CPUs, err = cpuSet(online); err != nil {
		return t, fmt.Errorf("read online CPUs: /sys/devices/system/cpu/online: %w", err)
	}
	if len(t.CPUs) == 0 {
		return t, errors.New("read online CPUs: /sys/devices/system/cpu/online lists none")
	}
	nodeOf, err := t.readNodes(f)
	if err != nil {
		return t, err
	}
	t.readCores(f, nodeOf)
	return t, nil
}

// readNodes fills t.Nodes with each NUMA node's online CPUs and returns
// the node of each CPU. A kernel without NUMA support has no node
// directory: one node.
func (t *Topology) readNodes(f Reader) (nodeOf map[int]int, err error) {
	t.Nodes = map[int]cpus.List{}
	nodeOf = map[int]int{}
	names, err := f.ReadDir("/sys/devices/system/node")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read NUMA nodes: %w", err)
	}
	for _, n := range names {
		id, ok := strings.CutPrefix(n, "node")
		num, err := strconv.Atoi(id)
		if !ok || err != nil {
			continue
		}
		list, err := ReadValue(f, "/sys/devices/system/node/"+n+"/cpulist")
		if err != nil {
			return nil, fmt.Errorf("read NUMA node %d: %w", num, err)
		}
		cpus, err := cpuSet(list)
		if err != nil {
			return nil, fmt.Errorf("read NUMA node %d cpulist: %w", num, err)
		}
		cpus = cpus.Intersect(t.CPUs)
		if len(cpus) == 0 {
			continue // memory-only node
		}
		t.Nodes[num] = cpus
		for _, c := range cpus {
			nodeOf[c] = num
		}
	}
	if len(t.Nodes) == 0 {
		t.Nodes[0] = t.CPUs
	}
	return nodeOf, nil
}

// readCores groups the online CPUs into cores by their thread siblings; a
// CPU whose topology directory is missing is a core of its own.
func (t *Topology) readCores(f Reader, nodeOf map[int]int) {
	placed := map[int]bool{}
	for _, c := range t.CPUs {
		if placed[c] {
			continue
		}
		dir := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/", c)
		sibs := cpus.List{c}
		if s, err := ReadValue(f, dir+"thread_siblings_list"); err == nil {
			if p, err := cpuSet(s); err == nil && p.Contains(c) {
				sibs = p.Intersect(t.CPUs)
			}
		}
		pkg := 0
		if s, err := ReadValue(f, dir+"physical_package_id"); err == nil {
			if v, err := strconv.Atoi(s); err == nil && v >= 0 {
				pkg = v
			}
		}
		for _, s := range sibs {
			placed[s] = true
		}
		if len(sibs) > 1 {
			t.SMT = true
		}
		t.Cores = append(t.Cores, Core{Package: pkg, Node: nodeOf[c], CPUs: sibs})
	}
	slices.SortFunc(t.Cores, func(a, b Core) int { return a.CPUs[0] - b.CPUs[0] })
	for i := range t.Cores {
		t.Cores[i].ID = i
	}
}

// CoreOf returns the core holding cpu, or nil.
func (t Topology) CoreOf(cpu int) *Core {
	for i := range t.Cores {
		if t.Cores[i].CPUs.Contains(cpu) {
			return &t.Cores[i]
		}
	}
	return nil
}

// NodeIDs returns the NUMA node numbers, sorted.
func (t Topology) NodeIDs() []int {
	ids := make([]int, 0, len(t.Nodes))
	for id := range t.Nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
