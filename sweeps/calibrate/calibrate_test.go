package calibrate

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostbench"
)

// pair brings up a netns pair for the test and takes it down after.
func pair(t *testing.T) (srv, cli infra.Entered) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("network namespaces need root; CI runs as root")
		}
		t.Skip("network namespaces need root")
	}
	p := &netns.Provider{Binary: labtest.Binary(t)}
	t.Cleanup(func() { p.Down(context.Background()) })
	pr, err := p.Up(context.Background(), infra.Spec{Campaign: "calibrate"})
	if err != nil {
		t.Fatal(err)
	}
	return pr.Server.(infra.Entered), pr.Client.(infra.Entered)
}

// recordingBencher keeps the figure each calibration bench measured, by
// configuration, so the test can hold the link record to them.
type recordingBencher struct {
	b        sweeps.Bencher
	measured map[string][]float64
}

func (r *recordingBencher) Bench(ctx context.Context, w lab.Workload, mark func(lab.Phase)) (*lab.Result, error) {
	res, err := r.b.Bench(ctx, w, mark)
	if err == nil && res != nil {
		key := fmt.Sprintf("%s, %d flow(s)", opOf(w.Ratio), w.Connections)
		r.measured[key] = append(r.measured[key], WireGbps(res, opOf(w.Ratio)))
	}
	return res, err
}

// The calibration on a netns pair runs the sink on the server host and
// four benches from the client (GET and SET, one flow and N), records
// exactly what each bench measured where the link keeps it, names the
// server host's NIC, and leaves nothing listening. How its figures
// compare with iperf3 on the same veth is a row of `make bench`: on these
// shared VMs iperf3 itself does not hold 20 % of itself run to run.
func TestCalibrationRecordsWhatItsBenchesMeasured(t *testing.T) {
	srv, cli := pair(t)
	const flows = 4
	d := time.Second
	rb := &recordingBencher{b: hostbench.HostBencher{Host: cli}, measured: map[string][]float64{}}
	var logs []string
	p := Pair{Server: srv, One: rb, Clients: 1,
		NICs: []sweeps.NICSource{&sweeps.NIC{Host: "server", Do: srv.Do, Addr: srv.DataAddr()}},
		Log:  func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
	k := sweeps.Calibration{Warmup: lab.Duration(200 * time.Millisecond), Duration: lab.Duration(d), ValueSize: 1 << 20}
	l, err := Measure(context.Background(), p, k, flows)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range logs {
		t.Log(line)
	}
	if len(l.NICs) != 1 || l.NICs[0].Interface != "lr-srv" || l.NICs[0].Driver != "veth" || l.NICs[0].MTU != 1500 {
		t.Errorf("link NICs %+v", l.NICs)
	}
	if l.Connections != flows || l.Clients != 1 || l.Duration.D() != d || l.ValueSize != 1<<20 {
		t.Errorf("link %+v", l)
	}
	for _, c := range []struct {
		key  string
		kept float64
	}{
		{"GET, 1 flow(s)", l.GET.PerFlowGbps},
		{"SET, 1 flow(s)", l.SET.PerFlowGbps},
		{"GET, 4 flow(s)", l.GET.Gbps},
		{"SET, 4 flow(s)", l.SET.Gbps},
	} {
		if got := rb.measured[c.key]; len(got) != 1 || got[0] != c.kept || c.kept <= 0 {
			t.Errorf("%s: the link records %.3f Gbps; the bench measured %v", c.key, c.kept, got)
		}
	}
	// The sink is gone with the calibration.
	if out, _ := srv.Run(context.Background(), "sh", "-c", "ss -ltnH | wc -l"); string(out) != "0\n" {
		t.Errorf("listeners left in the server namespace: %s", out)
	}
}
