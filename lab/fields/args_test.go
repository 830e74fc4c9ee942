package fields_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/lab/keys"
)

// Args is what the sweeps planner sends to remote hosts: parsing it back
// must give the same workload.
func TestArgsRoundTrip(t *testing.T) {
	w := lab.Workload{
		Host: "198.18.0.1", Port: 6380, User: "bench", Connections: 32, Pipeline: 2, Threads: 16,
		CPUList: lab.CPUList{4, 5, 6, 7}, Keyspace: 500, KeySize: 16, ValueSz: lab.OneSize(8 << 20),
		Ratio: lab.Ratio{Gets: 90, Sets: 10}, KeyDist: keys.Dist{Kind: keys.Gaussian, Mean: 0.25, SD: 0.1}, Prefill: true,
		Warmup: lab.Duration(5 * time.Second), Duration: lab.Duration(15 * time.Second), Verify: lab.VerifyFull, Seed: 42,
	}.Resolve()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	var got lab.Workload
	fields.BindFlags(fs, &got)
	if err := fs.Parse(fields.Args(w)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Resolve(), w) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got.Resolve(), w)
	}
	// A keyspace that fields.CheckKeyspaceHabit would refuse from a typed -n is
	// sent with its acknowledgement, so the remote bench runs it.
	big := w
	big.Keyspace, big.KeySize = 200_000, 16
	var bigGot lab.Workload
	fs = pflag.NewFlagSet("z", pflag.ContinueOnError)
	fields.BindFlags(fs, &bigGot)
	if err := fs.Parse(fields.Args(big)); err != nil {
		t.Fatal(err)
	}
	if large, _ := fs.GetBool("keyspace-large"); fields.CheckKeyspaceHabit(bigGot.Resolve(), large) != nil || bigGot.Keyspace != 200_000 {
		t.Errorf("a large campaign keyspace does not pass: %+v", bigGot)
	}
	// A campaign that names no thread count sends none: the bench host
	// picks its own default, and the flags must still parse.
	w.Threads = 0
	var again lab.Workload
	fs = pflag.NewFlagSet("y", pflag.ContinueOnError)
	fields.BindFlags(fs, &again)
	if err := fs.Parse(fields.Args(w)); err != nil {
		t.Fatal(err)
	}
	if err := fields.Validate(again.Resolve()); err != nil || again.Threads != 0 {
		t.Errorf("no thread count: threads %d, %v", again.Threads, err)
	}
}
