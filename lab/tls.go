package lab

// TLS is how the bench's connections (data and control) speak TLS to a
// TLS-only server. The zero value is plain TCP and is left out
// of records, so plaintext records and cell hashes read as before. Paths
// are stored, never the keys; lab/fields reads the files (TLSConfig).
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
