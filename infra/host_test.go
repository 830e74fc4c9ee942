package infra

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestParseFacts(t *testing.T) {
	cases := []struct {
		name, out string
		want      string // error substring, or "" for success
		arch      string
		nic       string // NIC carrying 198.18.0.1
	}{
		{"veth in a namespace", "x86_64\n6.1.0-28-amd64\n2\n" +
			`[{"ifindex":1,"ifname":"lo","mtu":65536,"addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8}]},` +
			`{"ifindex":2,"ifname":"lr-srv","mtu":1500,"addr_info":[{"family":"inet","local":"198.18.0.1","prefixlen":30},{"family":"inet6","local":"fe80::1","prefixlen":64}]}]` + "\n",
			"", "amd64", "lr-srv"},
		{"graviton", "aarch64\n6.12.0\n64\n[]\n", "", "arm64", ""},
		{"unknown arch", "riscv64\n6.1\n4\n[]\n", `architecture "riscv64"`, "", ""},
		{"bad nproc", "x86_64\n6.1\nmany\n[]\n", `nproc said "many"`, "", ""},
		{"truncated", "x86_64\n6.1\n", "want 4 parts", "", ""},
		{"bad json", "x86_64\n6.1\n2\n{\n", "ip -j addr show", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFacts([]byte(tc.out))
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("want error %q, got %v", tc.want, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Arch != tc.arch {
				t.Errorf("arch %q, want %q", f.Arch, tc.arch)
			}
			if tc.nic != "" {
				if got := f.NICWithAddr(mustAddr("198.18.0.1")); got != tc.nic {
					t.Errorf("NIC with 198.18.0.1: %q, want %q", got, tc.nic)
				}
			}
		})
	}
}

func TestSpecAndCommandValidate(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{Spec{}.Validate(), "spec campaign: empty"},
		{Spec{Campaign: "a/b"}.Validate(), "spec campaign"},
		{Spec{Campaign: "ok", Queues: -1}.Validate(), "spec queues"},
		{Spec{Campaign: "study-1.a", Queues: 4}.Validate(), ""},
		{Command{}.Validate(), "command argv: empty"},
		{Command{Argv: []string{"x"}, Timeout: -time.Second}.Validate(), "command timeout"},
		{Command{Argv: []string{"x"}, Env: []string{"1A=b"}}.Validate(), "command env"},
		{Command{Argv: []string{"x"}, Env: []string{"A_1=b=c"}}.Validate(), ""},
	} {
		if tc.want == "" && tc.err != nil || tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)) {
			t.Errorf("got %v, want %q", tc.err, tc.want)
		}
	}
}

func TestTailBuffer(t *testing.T) {
	b := &TailBuffer{Max: 5}
	b.Write([]byte("abc"))
	b.Write([]byte("defgh"))
	if b.String() != "defgh" {
		t.Errorf("tail %q", b.String())
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
