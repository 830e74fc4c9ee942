package infra

import (
	"errors"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab/tlsgen"
)

func TestArgs(t *testing.T) {
	yes := true
	files := tlsgen.Files{CA: "/r/ca.crt", ServerCert: "/r/server.crt", ServerKey: "/r/server.key"}
	tests := []struct {
		name    string
		s       ServerSettings
		want    string // argv joined by spaces, '' for the empty string
		refused string // part of the error when refused
		err     string // part of an error that is not a refusal
	}{
		{name: "the study's settings", s: ServerSettings{IOThreads: 16, MaxMemory: "60gb"},
			want: "--save '' --appendonly no --io-threads 16 --protected-mode no --maxmemory 60gb"},
		{name: "local port and bind", s: ServerSettings{Kind: Redis, Version: "7.0.15", Port: 7000, Bind: "127.0.0.1", RequirePass: "pw"},
			want: "--save '' --appendonly no --protected-mode no --port 7000 --bind 127.0.0.1 --requirepass pw"},
		{name: "persistence none, protected", s: ServerSettings{Persistence: PersistNone, ProtectedMode: true},
			want: "--save '' --appendonly no --protected-mode yes"},
		{name: "rdb", s: ServerSettings{Persistence: PersistRDB},
			want: "--save '3600 1 300 100 60 10000' --appendonly no --protected-mode no"},
		{name: "aof every second", s: ServerSettings{Kind: Redis, Version: "7.0.15", Persistence: PersistAOFEverySec},
			want: "--save '' --appendonly yes --appendfsync everysec --protected-mode no"},
		{name: "aof always on keydb", s: ServerSettings{Kind: KeyDB, Persistence: PersistAOFAlways},
			want: "--save '' --appendonly yes --appendfsync always --protected-mode no"},
		{name: "garnet without persistence", s: ServerSettings{Kind: Garnet, Persistence: PersistNone}, want: ""},
		{name: "rdb on garnet", s: ServerSettings{Kind: Garnet, Persistence: PersistRDB},
			refused: "persistence rdb on garnet"},
		{name: "aof on garnet", s: ServerSettings{Kind: Garnet, Persistence: PersistAOFAlways},
			refused: "persistence aof-always on garnet"},
		{name: "acl user and extra flags", s: ServerSettings{User: &ACLUser{"bench", "s3cret"}, Extra: []string{"--hz", "100"}},
			want: "--save '' --appendonly no --protected-mode no --user bench on >s3cret ~* &* +@all --hz 100"},
		{name: "keydb threads", s: ServerSettings{Kind: KeyDB, IOThreads: 4},
			want: "--save '' --appendonly no --server-threads 4 --protected-mode no"},
		{name: "garnet mapping", s: ServerSettings{Kind: Garnet, Port: 7000, MaxMemory: "8g", RequirePass: "pw"},
			want: "--memory 8g --port 7000 --auth Password --password pw"},
		{name: "io-threads-do-reads on valkey 7.2", s: ServerSettings{Version: "7.2.13", IOThreads: 4, IOThreadsDoReads: &yes},
			want: "--save '' --appendonly no --io-threads 4 --protected-mode no --io-threads-do-reads yes"},
		{name: "io-threads-do-reads on valkey 8.1", s: ServerSettings{Version: "8.1.1", IOThreadsDoReads: &yes},
			refused: "Valkey 8 always threads reads"},
		{name: "io-threads on redis 5", s: ServerSettings{Kind: Redis, Version: "5.0.14", IOThreads: 4},
			refused: "io-threads on redis 5.0.14"},
		{name: "acl user on redis 5", s: ServerSettings{Kind: Redis, Version: "5.0.14", User: &ACLUser{"a", "b"}},
			refused: "ACL users arrived in Redis 6.0"},
		{name: "io-threads on garnet", s: ServerSettings{Kind: Garnet, IOThreads: 4},
			refused: "Garnet has no io-threads"},
		{name: "tls only", s: ServerSettings{Kind: Redis, Version: "7.0.15", Port: 7000, TLS: true, TLSFiles: &files},
			want: "--save '' --appendonly no --protected-mode no --port 0 --tls-port 7000 --tls-cert-file /r/server.crt --tls-key-file /r/server.key --tls-ca-cert-file /r/ca.crt --tls-auth-clients no"},
		{name: "tls on redis 5", s: ServerSettings{Kind: Redis, Version: "5.0.14", Port: 7000, TLS: true, TLSFiles: &files},
			refused: "TLS arrived in Redis 6.0"},
		{name: "tls on garnet", s: ServerSettings{Kind: Garnet, Port: 7000, TLS: true, TLSFiles: &files},
			refused: "tls on garnet"},
		{name: "tls without certificate files", s: ServerSettings{TLS: true, Port: 7000}, err: "server settings tls: no certificate files"},
		{name: "tls without a port", s: ServerSettings{TLS: true, TLSFiles: &files},
			refused: "tls on valkey (any version): the TLS port must be chosen"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args, err := tc.s.Args()
			if tc.err != "" {
				if err == nil || errors.Is(err, ErrUnsupportedSetting) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if tc.refused != "" {
				if !errors.Is(err, ErrUnsupportedSetting) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("err = %v, want ErrUnsupportedSetting containing %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range args {
				if a == "" || strings.Contains(a, " ") {
					args[i] = "'" + a + "'"
				}
			}
			if got := strings.Join(args, " "); got != tc.want {
				t.Errorf("args = %s\nwant   %s", got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		s     ServerSettings
		field string
	}{
		{ServerSettings{Kind: "memcached"}, "kind"},
		{ServerSettings{Port: 70000}, "port"},
		{ServerSettings{CPUs: "3-1"}, "cpus"},
		{ServerSettings{CPUs: " "}, "cpus"},
		{ServerSettings{CPUs: "0-9223372036854775807"}, "cpus"},
		{ServerSettings{Env: []string{"MALLOC_CONF"}}, "env"},
		{ServerSettings{User: &ACLUser{Name: "x"}}, "user"},
		{ServerSettings{Version: "latest"}, "version"},
		{ServerSettings{Persistence: "sometimes"}, "persistence"},
	}
	for _, tc := range tests {
		err := tc.s.Validate()
		if err == nil || !strings.Contains(err.Error(), "server settings "+tc.field) {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", tc.s, err, tc.field)
		}
	}
}

func TestIdentityString(t *testing.T) {
	id := ServerIdentity{Kind: Valkey, Version: "8.1.1", Build: "8.1.1+dfsg1-3", Source: "debian:trixie", Runtime: "sid",
		Env: []string{"MALLOC_CONF=oversize_threshold:0"}}
	want := "valkey 8.1.1 (debian:trixie 8.1.1+dfsg1-3, runtime sid, MALLOC_CONF=oversize_threshold:0)"
	if got := id.String(); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
