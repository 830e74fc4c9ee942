package lab

import "fmt"

// Command is the command a run issues (--command): get or set (the same as
// -r 100:0 and -r 0:100), or mget or mset, which name several keys per
// request (--keys-per-op). The zero Command is the -r mix of GET and SET,
// as before the flag existed, and is left out of the JSON, so records and
// cell hashes of runs without it read as they always did.
type Command string

const (
	CommandGet  Command = "get"
	CommandSet  Command = "set"
	CommandMGet Command = "mget"
	CommandMSet Command = "mset"
)

// CommandForms is the help text for --command.
const CommandForms = "get, set (as -r 100:0, -r 0:100), mget or mset (--keys-per-op keys per request)"

// DefaultKeysPerOp is --keys-per-op's default for mget and mset: the
// memtier comparison's MGET of 10 keys.
const DefaultKeysPerOp = 10

// Validate says whether the command is one linerate runs, on its own; the
// bounds between fields are lab/fields'.
func (c Command) Validate() error {
	switch c {
	case "", CommandGet, CommandSet, CommandMGet, CommandMSet:
		return nil
	}
	return fmt.Errorf("%q: use %s", string(c), CommandForms)
}

// Multi says whether the command names several keys per request.
func (c Command) Multi() bool { return c == CommandMGet || c == CommandMSet }

// Reads says whether the command reads (get, mget); Writes, set and mset.
func (c Command) Reads() bool  { return c == CommandGet || c == CommandMGet }
func (c Command) Writes() bool { return c == CommandSet || c == CommandMSet }

func (c *Command) Set(s string) error {
	nc := Command(s)
	if err := nc.Validate(); err != nil {
		return err
	}
	*c = nc
	return nil
}
func (c Command) String() string { return string(c) }
func (c *Command) Type() string  { return "get|set|mget|mset" }

// Multi-key operations in the record: ops.MGET and ops.MSET, each op one
// request of Workload.KeysPerOp keys.
const (
	OpMGet Op = "MGET"
	OpMSet Op = "MSET"
)

// AllOps is every operation a record can hold, in record order.
var AllOps = []Op{OpGet, OpSet, OpMGet, OpMSet}

// Base is the single-key operation op moves data like: GET for MGET (server
// to client), SET for MSET.
func (op Op) Base() Op {
	switch op {
	case OpMGet:
		return OpGet
	case OpMSet:
		return OpSet
	}
	return op
}
