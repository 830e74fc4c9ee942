package kernel

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/shirou/gopsutil/v4/common"
)

// FS is a host's /proc, /sys and /etc mounted under Root: "/" (or "") on
// the machine itself, a fixture tree in tests, a host's root mounted
// elsewhere. Every file is named by its absolute path as on a real host.
type FS struct{ Root string }

func (f FS) root() string {
	if f.Root == "" {
		return "/"
	}
	return f.Root
}

// Path is where name (an absolute path on the host) is under the root.
// Cleaning under "/" first keeps ".." in a name from climbing out of it.
func (f FS) Path(name string) string {
	return filepath.Join(f.root(), path.Clean("/"+name))
}

// ReadFile reads a whole file.
func (f FS) ReadFile(name string) ([]byte, error) { return os.ReadFile(f.Path(name)) }

// ReadString reads a one-value file and trims the trailing newline.
func (f FS) ReadString(name string) (string, error) {
	b, err := f.ReadFile(name)
	return strings.TrimSpace(string(b)), err
}

// WriteFile writes data the way `echo value > file` does: one write into the
// existing file with no truncation dance, because proc and sysfs files take a
// value per write and cannot be replaced by rename. A file that does not exist
// is created (irqbalance's config), never a proc or sysfs one.
func (f FS) WriteFile(name string, data []byte) error {
	p := f.Path(name)
	fh, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if errors.Is(err, fs.ErrNotExist) && !isKernelPath(name) {
		fh, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	}
	if err != nil {
		return err
	}
	_, werr := fh.Write(data)
	cerr := fh.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

func isKernelPath(name string) bool {
	p := path.Clean("/" + name)
	return strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/sys/")
}

// ReadDir lists the names in a directory, sorted.
func (f FS) ReadDir(name string) ([]string, error) {
	ents, err := os.ReadDir(f.Path(name))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.Name()
	}
	return out, nil
}

// Stat describes a file (a sysctl's mode says whether a network namespace
// has it to itself).
func (f FS) Stat(name string) (fs.FileInfo, error) { return os.Stat(f.Path(name)) }

// Readlink returns a symlink's target as stored, without resolving it.
func (f FS) Readlink(name string) (string, error) { return os.Readlink(f.Path(name)) }

// Remove deletes a file.
func (f FS) Remove(name string) error { return os.Remove(f.Path(name)) }

// gopsutil points gopsutil's readers at this root: it takes the roots of
// /proc, /sys and /etc from the context (common.EnvMap), and every key is
// set so that none falls back to the HOST_PROC… environment variables.
func (f FS) gopsutil() context.Context {
	return context.WithValue(context.Background(), common.EnvKey, common.EnvMap{
		common.HostProcEnvKey: f.Path("/proc"),
		common.HostSysEnvKey:  f.Path("/sys"),
		common.HostEtcEnvKey:  f.Path("/etc"),
		common.HostRootEnvKey: f.root(),
	})
}
