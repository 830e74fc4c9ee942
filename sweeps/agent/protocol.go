package agent

import (
	"encoding/json"
	"time"

	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// Agent operations.
const (
	opFacts      = "facts"
	opResolve    = "resolve"
	opStart      = "start"
	opFlushAll   = "flushall"
	opSnapshot   = "snapshot"
	opInfo       = "info"
	opKeyMemory  = "key-memory"
	opBGSave     = "bgsave"
	opStop       = "stop"
	opTuneApply  = "tune-apply"
	opTuneVerify = "tune-verify"
	opTuneRevert = "tune-revert"
	opNIC        = "nic"
)

// agentRequest is one line the coordinator sends.
type agentRequest struct {
	ID int    `json:"id"`
	Op string `json:"op"`
	// facts
	Role      string `json:"role,omitempty"`
	FaultCost bool   `json:"fault_cost,omitempty"`
	// resolve
	Version *sweeps.VersionSpec `json:"version,omitempty"`
	// start
	Plan   *sweeps.PlanVersion `json:"plan,omitempty"`
	Bind   string              `json:"bind,omitempty"`
	LogDir string              `json:"log_dir,omitempty"`
	// flushall, snapshot (0: the host only), stop, info
	Server int `json:"server,omitempty"`
	// info: the INFO sections to read
	Sections []string `json:"sections,omitempty"`
	// key-memory: how many keys to sample
	Keys int `json:"keys,omitempty"`
	// tune-apply: the profile file's text, the host's data address, the
	// part of the host to tune (tuning.Scope; "" is all of it) and, for
	// the kernel scope, the machine's network namespace (a path there)
	Profile     string `json:"profile,omitempty"`
	DataAddr    string `json:"data_addr,omitempty"`
	Scope       string `json:"scope,omitempty"`
	KernelNetns string `json:"kernel_netns,omitempty"`
	// nic: the interface carrying DataAddr, or the one named Interface;
	// Role names the host in the answer
	Interface string `json:"interface,omitempty"`
}

// agentReply is one line the agent sends: the answer to request ID, or an
// event (ID 0).
type agentReply struct {
	ID    int    `json:"id,omitempty"`
	Event string `json:"event,omitempty"` // hello, exited
	Error string `json:"error,omitempty"`

	Facts    *sweeps.HostFacts     `json:"facts,omitempty"`
	Resolved *sweeps.Resolved      `json:"resolved,omitempty"`
	Started  *agentServer          `json:"started,omitempty"`
	Snapshot *hostmetrics.Snapshot `json:"snapshot,omitempty"`
	Tuning   json.RawMessage       `json:"tuning,omitempty"`
	Drifts   int                   `json:"drifts,omitempty"`
	NIC      *nicAnswer            `json:"nic,omitempty"`
	// facts: the agent's clock as it answers; info: when the server did
	Now time.Time `json:"now,omitzero"`
	// info: the sections' fields
	Info map[string]string `json:"info,omitempty"`
	// key-memory: MEMORY USAGE of the sampled keys
	KeyMemory *sweeps.KeyMemory `json:"key_memory,omitempty"`
	// exited: which server ended and how
	Server int `json:"server,omitempty"`
	PID    int `json:"pid,omitempty"` // hello: the agent's PID
}

// agentServer describes a server the agent started.
type agentServer struct {
	ID       int               `json:"id"`
	Host     string            `json:"host"`
	Port     int               `json:"port"`
	PID      int               `json:"pid,omitempty"`
	Identity sweeps.Resolved   `json:"identity"`
	Info     map[string]string `json:"info,omitempty"`
	TLS      *agentTLS         `json:"tls,omitempty"` // a TLS-only server's CA; nil for plain TCP
}
