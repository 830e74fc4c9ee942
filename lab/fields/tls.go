package fields

import (
	"crypto/tls"
	"fmt"
	"io"
	"os"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/tlsgen"
)

// TLSConfig builds the client TLS configuration for a server reached as
// host: nil, nil when t is off. A file that cannot be read or parsed is a
// FieldError naming its flag.
func TLSConfig(t lab.TLS, host string) (*tls.Config, error) {
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
