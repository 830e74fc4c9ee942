package fields

import (
	"testing"

	"github.com/linerate/linerate/lab"
)

func TestHabitHelpers(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "127.3.2.1": true, "::1": true, "[::1]": true,
		"localhost": true, "198.18.0.1": false, "example": false, "": false} {
		if isLoopback(host) != want {
			t.Errorf("isLoopback(%q) != %v", host, want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 8 << 20: "8 MiB", 20 << 20: "20 MiB", 1536: "1.5 KiB", 100_000 * (64 << 20): "6.1 TiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
	si := &lab.ServerInfo{Config: map[string]string{"maxmemory": "0"}, Info: map[string]string{"maxmemory": "1048576"}}
	if maxmemory(si) != 1<<20 || maxmemory(&lab.ServerInfo{}) != 0 || maxmemory(nil) != 0 {
		t.Errorf("maxmemory: %d", maxmemory(si))
	}
	// The figures stand in the message; a remote server skips the free-memory check.
	w := lab.Workload{Host: "198.18.0.1", Keyspace: 10, ValueSz: lab.OneSize(1 << 20)}
	if err := CheckPrefillFits(w, &lab.ServerInfo{}, func() (int64, error) { return 1, nil }); err != nil {
		t.Errorf("a remote server was judged by this host's memory: %v", err)
	}
	w.Host = "127.0.0.1"
	if err := CheckPrefillFits(w, &lab.ServerInfo{}, func() (int64, error) { return 1 << 20, nil }); err == nil || err.Error() != "--prefill: 10 keys x 1MiB = 10 MiB exceeds this host's free memory 1 MiB (MemAvailable), and the server is on this host; lower -n or -s" {
		t.Errorf("free memory: %v", err)
	}
}
