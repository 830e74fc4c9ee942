// Package exitcode is how a linerate command ends: the process's exit
// status, and the one a bench record states for its stop reason
// (`stop.exit_code`). The schema (package lab) names the reasons; the
// numbers are the commands', documented in the README and
// docs/result-schema.md.
package exitcode

import "github.com/linerate/linerate/lab"

// The exit codes.
const (
	OK          = 0
	Errors      = 1 // completed, but some requests failed (verify, server errors, timeouts)
	Usage       = 2
	SetupFailed = 3
	ServerLost  = 4
	Interrupted = 130
)

// For is the exit code of a run that stopped for r; a reason it does not
// know is Errors.
func For(r lab.StopReason) int {
	switch r {
	case lab.StopCompleted:
		return OK
	case lab.StopErrors:
		return Errors
	case lab.StopSetupFailed:
		return SetupFailed
	case lab.StopServerLost:
		return ServerLost
	case lab.StopInterrupted:
		return Interrupted
	}
	return Errors
}
