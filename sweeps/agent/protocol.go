package agent

import (
	"encoding/json"
	"fmt"
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

// A request line is {"id": N, "op": OP, then the fields of OP's request}:
// each operation has a request type of its own, and the agent a handler
// per operation (server.go).

// envelope is what every request line has.
type envelope struct {
	ID int    `json:"id"`
	Op string `json:"op"`
}

// request is one operation's request.
type request interface{ op() string }

// encodeRequest is the line that sends req as request id.
func encodeRequest(id int, req request) ([]byte, error) {
	head, err := json.Marshal(envelope{ID: id, Op: req.op()})
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%s request: %w", req.op(), err)
	}
	if len(body) <= 2 { // {}
		return head, nil
	}
	return append(append(head[:len(head)-1], ','), body[1:]...), nil
}

// factsRequest asks for the host's facts; FaultCost also measures what a
// minor fault costs there.
type factsRequest struct {
	Role      string `json:"role,omitempty"`
	FaultCost bool   `json:"fault_cost,omitempty"`
}

// resolveRequest asks what a version names on the host.
type resolveRequest struct {
	Version *sweeps.VersionSpec `json:"version,omitempty"`
}

// startRequest starts a server version on Bind, its logs in LogDir.
type startRequest struct {
	Plan   *sweeps.PlanVersion `json:"plan,omitempty"`
	Bind   string              `json:"bind,omitempty"`
	LogDir string              `json:"log_dir,omitempty"`
}

// serverRef names a server the agent started (its id in the answer to
// start).
type serverRef struct {
	Server int `json:"server,omitempty"`
}

type (
	flushRequest  struct{ serverRef }
	stopRequest   struct{ serverRef }
	bgsaveRequest struct{ serverRef }
	// snapshotRequest samples the host and the server; Server 0: the
	// host only.
	snapshotRequest   struct{ serverRef }
	tuneVerifyRequest struct{}
	tuneRevertRequest struct{}
)

// infoRequest reads the INFO sections of a server.
type infoRequest struct {
	serverRef
	Sections []string `json:"sections,omitempty"`
}

// keyMemoryRequest samples MEMORY USAGE of Keys keys of a server.
type keyMemoryRequest struct {
	serverRef
	Keys int `json:"keys,omitempty"`
}

// tuneApplyRequest applies a profile: the profile file's text, the host's data
// address, the part of the host to tune (tuning.Scope; "" is all of it)
// and, for the kernel scope, the machine's network namespace (a path
// there).
type tuneApplyRequest struct {
	Profile     string `json:"profile,omitempty"`
	DataAddr    string `json:"data_addr,omitempty"`
	Scope       string `json:"scope,omitempty"`
	KernelNetns string `json:"kernel_netns,omitempty"`
}

// nicRequest reads the interface carrying DataAddr, or the one named
// Interface; Role names the host in the answer.
type nicRequest struct {
	Role      string `json:"role,omitempty"`
	DataAddr  string `json:"data_addr,omitempty"`
	Interface string `json:"interface,omitempty"`
}

func (factsRequest) op() string      { return opFacts }
func (resolveRequest) op() string    { return opResolve }
func (startRequest) op() string      { return opStart }
func (flushRequest) op() string      { return opFlushAll }
func (stopRequest) op() string       { return opStop }
func (bgsaveRequest) op() string     { return opBGSave }
func (snapshotRequest) op() string   { return opSnapshot }
func (infoRequest) op() string       { return opInfo }
func (keyMemoryRequest) op() string  { return opKeyMemory }
func (tuneApplyRequest) op() string  { return opTuneApply }
func (tuneVerifyRequest) op() string { return opTuneVerify }
func (tuneRevertRequest) op() string { return opTuneRevert }
func (nicRequest) op() string        { return opNIC }

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
