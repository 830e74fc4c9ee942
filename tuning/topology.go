package tuning

import "github.com/linerate/linerate/infra/kernel"

// The host's processors as derivation sees them are read and parsed in
// infra/kernel.
type (
	// Core is one physical core: the CPUs (hardware threads) that share it.
	Core = kernel.Core
	// Topology is the host's online CPUs, cores and NUMA nodes.
	Topology = kernel.Topology
)

// ReadTopology reads /sys/devices/system/cpu and /sys/devices/system/node.
func ReadTopology(f FS) (Topology, error) { return kernel.ReadTopology(f) }
