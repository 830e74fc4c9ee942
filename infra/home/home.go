// Package home says where linerate keeps its per-user state (the server
// store, the private apt caches): $LINERATE_HOME when set, otherwise a
// linerate folder in the user's cache directory.
package home

import (
	"fmt"
	"os"
	"path/filepath"
)

// Dir returns the linerate home directory. It does not create it.
func Dir() (string, error) {
	if d := os.Getenv("LINERATE_HOME"); d != "" {
		return filepath.Abs(d)
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find linerate home: %w (set LINERATE_HOME)", err)
	}
	return filepath.Join(c, "linerate"), nil
}
