package resp

import "testing"

func TestServerKind(t *testing.T) {
	for _, tc := range []struct {
		name          string
		info          map[string]string
		kind, version string
	}{
		{"valkey", map[string]string{"redis_version": "7.2.4", "valkey_version": "8.1.1", "server_name": "valkey"}, "valkey", "8.1.1"},
		{"valkey without its version", map[string]string{"redis_version": "7.2.4", "server_name": "valkey"}, "valkey", "7.2.4"},
		{"redis", map[string]string{"redis_version": "7.4.2"}, "redis", "7.4.2"},
		{"keydb by name", map[string]string{"redis_version": "6.3.4", "server_name": "keydb"}, "keydb", "6.3.4"},
		{"keydb by version", map[string]string{"redis_version": "6.3.4", "keydb_version": "6.3.4"}, "keydb", "6.3.4"},
		{"the sink", map[string]string{"redis_version": "0.0.0", "server_name": "linerate-sink"}, "linerate-sink", "0.0.0"},
		{"nothing said", map[string]string{}, "redis", ""},
	} {
		if k, v := ServerKind(tc.info); k != tc.kind || v != tc.version {
			t.Errorf("%s: %s %s, want %s %s", tc.name, k, v, tc.kind, tc.version)
		}
	}
}
