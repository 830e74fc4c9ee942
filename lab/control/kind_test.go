package control_test

import (
	"context"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/control"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/resp"
)

// A record names the server as the launchers do: one detector,
// resp.ServerKind, for every INFO a server may give.
func TestServerInfoNamesTheKindAsTheLaunchersDo(t *testing.T) {
	for _, tc := range []struct{ name, info, kind, version string }{
		{"redis", "redis_version:7.2.4\r\n", "redis", "7.2.4"},
		{"valkey", "redis_version:7.2.4\r\nvalkey_version:9.1.2\r\nserver_name:valkey\r\n", "valkey", "9.1.2"},
		{"valkey by name", "redis_version:7.2.4\r\nserver_name:valkey\r\n", "valkey", "7.2.4"},
		{"keydb", "redis_version:6.3.4\r\nkeydb_version:6.3.4\r\n", "keydb", "6.3.4"},
		{"sink", "redis_version:0.0.0\r\nserver_name:" + lab.SinkName + "\r\n", lab.SinkName, "0.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "# Server\r\n" + tc.info
			if k, v := resp.ServerKind(resp.ParseInfo(text)); k != tc.kind || v != tc.version {
				t.Fatalf("resp.ServerKind says %s %s, the table %s %s", k, v, tc.kind, tc.version)
			}
			p := labtest.StartPeer(t, labtest.Answer(map[string]string{
				"PING": "+PONG\r\n", "INFO": labtest.Bulk(text), "CONFIG": "*0\r\n",
			}))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ctl, err := control.Dial(ctx, lab.Workload{Host: "127.0.0.1", Port: p.Port})
			if err != nil {
				t.Fatal(err)
			}
			defer ctl.Close()
			si, err := ctl.ServerInfo(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if si.Name != tc.kind || si.Version != tc.version {
				t.Errorf("record names %s %s, want %s %s", si.Name, si.Version, tc.kind, tc.version)
			}
		})
	}
}
