package lab

import (
	"crypto/tls"
	"fmt"
	"io"
	"os"

	"github.com/linerate/linerate/lab/tlsgen"
)

// TLS is how the bench's connections (data and control) speak TLS to a
// TLS-only server. The zero value is plain TCP and is left out
// of records, so plaintext records and cell hashes read as before. Paths
// are stored, never the keys.
type TLS struct {
	On     bool   `json:"on"`
	CACert string `json:"cacert,omitempty"` // PEM CA to trust; empty: the system's roots
	Cert   string `json:"cert,omitempty"`   // client certificate (mutual TLS)
	Key    string `json:"key,omitempty"`    // its private key
	SNI    string `json:"sni,omitempty"`    // server name to send and verify; empty: -h
	// Insecure skips verifying the server's certificate. Never a default:
	// only --tls-insecure, named, turns it on.
	Insecure bool `json:"insecure,omitempty"`
}

// IsZero says the workload is plain TCP.
func (t TLS) IsZero() bool { return t == TLS{} }

// tlsRule refuses TLS flags that cannot mean anything together; it names
// the flag that is out of place. The files are read by Config, at setup.
func tlsRule(w *Workload) (flag, why string) {
	t := w.TLS
	if !t.On {
		for _, f := range []struct {
			flag string
			set  bool
		}{{"--cacert", t.CACert != ""}, {"--cert", t.Cert != ""}, {"--key", t.Key != ""}, {"--sni", t.SNI != ""}, {"--tls-insecure", t.Insecure}} {
			if f.set {
				return f.flag, "needs --tls"
			}
		}
		return "", ""
	}
	switch {
	case t.Insecure && t.CACert != "":
		return "--tls-insecure", "cannot go with --cacert: either verify against the CA or do not verify"
	case t.Cert != "" && t.Key == "":
		return "--cert", "needs --key (the client certificate's private key)"
	case t.Key != "" && t.Cert == "":
		return "--key", "needs --cert (the client certificate)"
	}
	return "", ""
}

// Config builds the client TLS configuration for a server reached as
// host: nil, nil when t is off. A file that cannot be read or parsed is a
// FieldError naming its flag.
func (t TLS) Config(host string) (*tls.Config, error) {
	if !t.On {
		return nil, nil
	}
	name := t.SNI
	if name == "" {
		name = host
	}
	var cfg *tls.Config
	if t.CACert != "" {
		ca, err := readPEM("--cacert", t.CACert)
		if err != nil {
			return nil, err
		}
		if cfg, err = (&tlsgen.Bundle{CACert: ca}).ClientConfig(name); err != nil {
			return nil, &FieldError{Field: "--cacert", Msg: fmt.Sprintf("%s: %v", t.CACert, err)}
		}
	} else {
		// No CA named: the system's roots, or none with --tls-insecure.
		cfg = &tls.Config{ServerName: name, MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.Insecure}
	}
	if t.Cert != "" {
		cert, err := readPEM("--cert", t.Cert)
		if err != nil {
			return nil, err
		}
		key, err := readPEM("--key", t.Key)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, &FieldError{Field: "--cert", Msg: fmt.Sprintf("%s with --key %s: %v", t.Cert, t.Key, err)}
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// MaxPEMBytes bounds a certificate or key file: a CA bundle of every
// public root is about 200 KiB, and /dev/zero must not fill the memory.
const MaxPEMBytes = 1 << 20

func readPEM(flag, path string) ([]byte, error) {
	bad := func(format string, a ...any) error { return &FieldError{Field: flag, Msg: fmt.Sprintf(format, a...)} }
	f, err := os.Open(path)
	if err != nil {
		return nil, bad("%v", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, bad("%s: not a regular file; give a PEM file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxPEMBytes+1))
	if err != nil {
		return nil, bad("%v", err)
	}
	if len(b) > MaxPEMBytes {
		return nil, bad("%s: over %d bytes; give a PEM file", path, MaxPEMBytes)
	}
	return b, nil
}
