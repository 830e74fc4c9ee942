// Package tlsgen makes the throwaway certificates of one run: a CA, a server
// certificate it signs, and optionally a client certificate for mutual TLS.
// Everything is crypto/x509 (no openssl call), ECDSA P-256, short-lived, and
// the CA's private key never leaves memory: once the run's certificates are
// signed nothing else can be, so a leaked directory trusts nothing new.
package tlsgen

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// DefaultValidity is how long the certificates are valid when Options says
// nothing: a day covers a campaign of many cells, and a certificate found
// on a disk afterwards is soon worthless. A soak longer than that sets
// Validity.
const DefaultValidity = 24 * time.Hour

// MaxValidity bounds Validity: these certificates are for one run.
const MaxValidity = 31 * 24 * time.Hour

// backdate starts validity before now, so a host whose clock is behind the
// one that signed still accepts the certificate.
const backdate = time.Hour

// Options says what to certify. The zero value certifies a server reached
// as localhost, 127.0.0.1 or ::1, without a client certificate.
type Options struct {
	// Name goes into the certificates' common names (e.g. the run ID), so a
	// certificate can be traced to its run. Default "linerate".
	Name string
	// DNSNames and IPs are the server certificate's subject alternative
	// names; clients check the name they dial against them. Both empty
	// means localhost, 127.0.0.1 and ::1.
	DNSNames []string
	IPs      []net.IP
	// Client also issues a client certificate signed by the same CA, for
	// servers that verify clients (tls-auth-clients yes).
	Client bool
	// Validity is how long the certificates are valid from now (default
	// DefaultValidity, at most MaxValidity). They are valid from an hour
	// before now, for clocks that lag.
	Validity time.Duration
}

// Bundle is one run's certificates in PEM. Key fields are PKCS#8.
type Bundle struct {
	CACert     []byte
	ServerCert []byte
	ServerKey  []byte
	ClientCert []byte // nil unless Options.Client
	ClientKey  []byte
	NotAfter   time.Time
}

// Generate makes a CA and signs the certificates Options asks for.
func Generate(opt Options) (*Bundle, error) {
	if opt.Name == "" {
		opt.Name = "linerate"
	}
	if len(opt.DNSNames) == 0 && len(opt.IPs) == 0 {
		opt.DNSNames = []string{"localhost"}
		opt.IPs = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	switch {
	case opt.Validity == 0:
		opt.Validity = DefaultValidity
	case opt.Validity < 0 || opt.Validity > MaxValidity:
		return nil, fmt.Errorf("certificate validity %s: use up to %s", opt.Validity, MaxValidity)
	}
	now := time.Now()
	notBefore, notAfter := now.Add(-backdate).Truncate(time.Second), now.Add(opt.Validity).Truncate(time.Second)

	caKey, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	// Each CA's name is unique: two runs' CAs of one name make a verifier
	// try the wrong one and its error talk of a signature failure instead
	// of an unknown authority.
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("CA name: %w", err)
	}
	ca := &x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s throwaway CA %x", opt.Name, id)},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true, // it signs leaves only
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := sign(ca, ca, caKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA: %w", err)
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, fmt.Errorf("read back CA: %w", err)
	}
	b := &Bundle{CACert: pemBlock("CERTIFICATE", caDER), NotAfter: notAfter}

	// The server certificate also allows client authentication: valkey and
	// redis present tls-cert-file when they connect out (replicas, the
	// cluster bus), and the peer checks it as a client certificate.
	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: opt.Name + " server"},
		DNSNames:    opt.DNSNames,
		IPAddresses: opt.IPs,
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if b.ServerCert, b.ServerKey, err = leaf(server, ca, caKey); err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	if opt.Client {
		client := &x509.Certificate{
			Subject:     pkix.Name{CommonName: opt.Name + " client"},
			NotBefore:   notBefore,
			NotAfter:    notAfter,
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if b.ClientCert, b.ClientKey, err = leaf(client, ca, caKey); err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
	}
	return b, nil
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

// sign gives tmpl a random 128-bit serial and certifies key's public half
// with signer, the key of parent.
func sign(tmpl, parent *x509.Certificate, key, signer *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	return x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
}

// leaf makes a key pair and a certificate for it signed by the CA.
func leaf(tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	der, err := sign(tmpl, ca, key, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", keyDER), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// Files are the paths Write wrote. ClientCert and ClientKey are empty
// without a client certificate.
type Files struct {
	CA         string
	ServerCert string
	ServerKey  string
	ClientCert string
	ClientKey  string
}

// Write puts the bundle into dir (made 0700 if missing): certificates 0644,
// keys 0600. Existing files of the same names are replaced, and their mode
// is set again, so a key never stays readable from an earlier run.
func (b *Bundle) Write(dir string) (Files, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Files{}, fmt.Errorf("certificate directory %s: %w", dir, err)
	}
	f := Files{CA: filepath.Join(dir, "ca.crt"), ServerCert: filepath.Join(dir, "server.crt"), ServerKey: filepath.Join(dir, "server.key")}
	type file struct {
		path string
		data []byte
		mode os.FileMode
	}
	write := []file{{f.CA, b.CACert, 0o644}, {f.ServerCert, b.ServerCert, 0o644}, {f.ServerKey, b.ServerKey, 0o600}}
	if b.ClientCert != nil {
		f.ClientCert, f.ClientKey = filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
		write = append(write, file{f.ClientCert, b.ClientCert, 0o644}, file{f.ClientKey, b.ClientKey, 0o600})
	}
	for _, w := range write {
		if err := writeFile(w.path, w.data, w.mode); err != nil {
			return Files{}, err
		}
	}
	return f, nil
}

// writeFile writes a fresh file beside path and renames it over path, so
// the mode is the one asked for from the first byte on.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	err = errors.Join(err, tmp.Chmod(mode), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ServerArgs are the valkey-server/redis-server arguments that serve TLS
// only, on tlsPort, with these files. authClients says whether the server
// demands a client certificate signed by the CA (tls-auth-clients).
func (f Files) ServerArgs(tlsPort int, authClients bool) []string {
	auth := "no"
	if authClients {
		auth = "yes"
	}
	return []string{"--port", "0", "--tls-port", strconv.Itoa(tlsPort),
		"--tls-cert-file", f.ServerCert, "--tls-key-file", f.ServerKey,
		"--tls-ca-cert-file", f.CA, "--tls-auth-clients", auth}
}

// ClientConfig is a TLS client configuration that trusts only the bundle's
// CA (not the system's roots) and presents the client certificate when
// there is one. serverName is checked against the server certificate's
// names; an IP address works too.
func (b *Bundle) ClientConfig(serverName string) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b.CACert) {
		return nil, errors.New("tls client config: the CA certificate does not parse")
	}
	c := &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}
	if b.ClientCert != nil {
		pair, err := tls.X509KeyPair(b.ClientCert, b.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("tls client config: client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// ServerConfig is a TLS server configuration with the server certificate;
// with a client certificate in the bundle it also demands one signed by the
// CA, as tls-auth-clients yes does.
func (b *Bundle) ServerConfig() (*tls.Config, error) {
	pair, err := tls.X509KeyPair(b.ServerCert, b.ServerKey)
	if err != nil {
		return nil, fmt.Errorf("tls server config: server certificate: %w", err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if b.ClientCert != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(b.CACert)
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}
