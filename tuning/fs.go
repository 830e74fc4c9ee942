package tuning

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// FS is the file half of the host seam: every read and write of /proc, /sys
// and /etc goes through it, named by absolute paths as on a real host. DirFS
// roots it at a directory, so the same code runs on the live system ("/") and
// on a fixture tree copied into a test's temporary directory.
type FS interface {
	ReadFile(name string) ([]byte, error)
	WriteFile(name string, data []byte) error
	ReadDir(name string) ([]string, error)
	// Readlink returns a symlink's target as stored, without resolving it.
	Readlink(name string) (string, error)
	// Remove deletes a file; revert uses it for files apply created.
	Remove(name string) error
}

// DirFS is an FS rooted at a directory.
type DirFS struct{ Root string }

// NewDirFS roots an FS at root; "" means "/".
func NewDirFS(root string) DirFS {
	if root == "" {
		root = "/"
	}
	return DirFS{Root: root}
}

func (d DirFS) real(name string) string {
	// Clean under "/" first so ".." in a name cannot climb out of the root.
	return filepath.Join(d.Root, path.Clean("/"+name))
}

// ReadFile reads a whole file.
func (d DirFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(d.real(name)) }

// WriteFile writes data the way `echo value > file` does: one write into the
// existing file with no truncation dance, because proc and sysfs files take a
// value per write and cannot be replaced by rename. A file that does not exist
// is created (irqbalance's config), never a proc or sysfs one.
func (d DirFS) WriteFile(name string, data []byte) error {
	p := d.real(name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if errors.Is(err, fs.ErrNotExist) && !isKernelPath(name) {
		f, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	}
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// ReadDir lists the names in a directory, sorted.
func (d DirFS) ReadDir(name string) ([]string, error) {
	ents, err := os.ReadDir(d.real(name))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.Name()
	}
	return out, nil
}

// Stat describes a file; PerNamespace reads a sysctl's mode from it.
func (d DirFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(d.real(name)) }

// Readlink returns a symlink's stored target.
func (d DirFS) Readlink(name string) (string, error) { return os.Readlink(d.real(name)) }

// Remove deletes a file.
func (d DirFS) Remove(name string) error { return os.Remove(d.real(name)) }

func isKernelPath(name string) bool {
	return strings.HasPrefix(name, "/proc/") || strings.HasPrefix(name, "/sys/")
}

// readString reads a one-value file and trims the trailing newline.
func readString(f FS, name string) (string, error) {
	b, err := f.ReadFile(name)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
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
