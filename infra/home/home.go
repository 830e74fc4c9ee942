// Package home says where linerate keeps its per-user state (the server
// store, the private apt caches): $LINERATE_HOME when set, otherwise a
// linerate folder in the user's cache directory, or in the temp directory
// when the user has none (no $HOME, as under some CI runners).
package home

import (
	"os"
	"path/filepath"
	"strconv"
)

// Dir returns the linerate home directory. It does not create it.
func Dir() (string, error) {
	if d := os.Getenv("LINERATE_HOME"); d != "" {
		return filepath.Abs(d)
	}
	if c, err := os.UserCacheDir(); err == nil {
		return filepath.Join(c, "linerate"), nil
	}
	return filepath.Join(os.TempDir(), "linerate-"+strconv.Itoa(os.Getuid())), nil
}
