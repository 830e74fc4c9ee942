package sshhost

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyMismatchError is a host whose key is not the pinned one: it is
// refused, never trusted again silently.
type HostKeyMismatchError struct {
	Host   string
	Got    string   // fingerprint offered
	Pinned []string // fingerprints in the file
	File   string
}

func (e *HostKeyMismatchError) Error() string {
	return fmt.Sprintf("host key of %s does not match the pinned key: offered %s, pinned %s in %s; "+
		"refusing to connect (if the host was rebuilt on purpose, delete its line from %s)",
		e.Host, e.Got, strings.Join(e.Pinned, ", "), e.File, e.File)
}

// knownMu serializes reading and appending known_hosts files of this
// process (both hosts of a pair share the campaign's file).
var knownMu sync.Mutex

// pinning is a host-key callback with trust on first use: a host missing
// from file is added to it; a host present with another key is refused.
func pinning(file string) ssh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		knownMu.Lock()
		defer knownMu.Unlock()
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return fmt.Errorf("known_hosts %s: %w", file, err)
		}
		f, err := os.OpenFile(file, os.O_CREATE|os.O_RDONLY, 0o600)
		if err != nil {
			return fmt.Errorf("known_hosts %s: %w", file, err)
		}
		f.Close()
		check, err := knownhosts.New(file)
		if err != nil {
			return fmt.Errorf("known_hosts %s: %w", file, err)
		}
		err = check(hostname, remote, key)
		var ke *knownhosts.KeyError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &ke) && len(ke.Want) > 0:
			mm := &HostKeyMismatchError{Host: hostname, Got: ssh.FingerprintSHA256(key), File: file}
			for _, w := range ke.Want {
				mm.Pinned = append(mm.Pinned, ssh.FingerprintSHA256(w.Key))
			}
			return mm
		case errors.As(err, &ke):
			line := knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key)
			af, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0o600)
			if err != nil {
				return fmt.Errorf("known_hosts %s: pin %s: %w", file, hostname, err)
			}
			_, werr := af.WriteString(line + "\n")
			if cerr := af.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				return fmt.Errorf("known_hosts %s: pin %s: %w", file, hostname, werr)
			}
			return nil
		default:
			return fmt.Errorf("known_hosts %s: %w", file, err)
		}
	}
}
