package tuning

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/linerate/linerate/lab/cpus"
)

// FS is the file half of the host seam: every read and write of /proc, /sys
// and /etc goes through it, named by absolute paths as on a real host. The
// kernel's files are read and parsed by infra/kernel's readers over it
// (ReadNetDevice, ReadInterrupts, ReadIRQAffinity, ReadSysctl, ReadTopology);
// tuning writes the values back through WriteFile at the paths infra/kernel
// names (SysctlPath, IRQAffinityPath).
// kernel.FS is the real one, rooted at "/" on the live system or at a
// fixture tree copied into a test's temporary directory; a host tuned from
// inside a network namespace wraps it (WithScope).
type FS interface {
	ReadFile(name string) ([]byte, error)
	WriteFile(name string, data []byte) error
	ReadDir(name string) ([]string, error)
	// Readlink returns a symlink's target as stored, without resolving it.
	Readlink(name string) (string, error)
	// Remove deletes a file; revert uses it for files apply created.
	Remove(name string) error
}

// parseCPUSet reads a CPU list as a set: tuning keeps its CPU lists
// ascending, whatever order a profile wrote them in.
func parseCPUSet(s string) (cpus.List, error) {
	l, err := cpus.Parse(s)
	return l.Sorted(), err
}

// writeValue writes one value and wraps a refusal with the file and value, the
// two things an operator needs to reproduce it by hand.
func writeValue(f FS, name, value string) error {
	if err := f.WriteFile(name, []byte(value+"\n")); err != nil {
		return &RefusedError{Path: name, Value: value, Err: err}
	}
	return nil
}

// RefusedError is a write the kernel (or the file system) did not accept.
type RefusedError struct {
	Path  string
	Value string
	Err   error
}

func (e *RefusedError) Error() string {
	err := e.Err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is already in the message
	}
	return fmt.Sprintf("write %q to %s: %v", e.Value, e.Path, err)
}

func (e *RefusedError) Unwrap() error { return e.Err }
