package scratch

import (
	"context"
	"os"
	"testing"

	"github.com/linerate/linerate/infra/servers"
)

func TestScratch(t *testing.T) {
	st, err := servers.Open("/tmp/lr-store1")
	if err != nil {
		t.Fatal(err)
	}
	st.Log = os.Stderr
	for _, s := range []string{"valkey@9.1", "redis@7.0", "valkey@8.0", "valkey@8.1", "redis@8.0"} {
		sel, _ := servers.ParseSelector(s)
		inst, err := st.Install(context.Background(), sel, servers.InstallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s -> %s %s %s %.1fs %dMB", s, inst.ID, inst.Server, inst.Allocator, inst.Seconds, inst.SizeBytes>>20)
	}
}
