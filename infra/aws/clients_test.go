package aws

import (
	"context"
	"net/netip"
	"sort"
	"testing"

	"github.com/linerate/linerate/infra/aws/awsfake"
)

// A pair with three clients: one RunInstances launches all four (MinCount
// = MaxCount, all or none) in one placement group, launch index 0 is the
// server, the clients follow in order, and Down terminates all four. With
// the fake short of capacity in the first zone the whole launch moves on,
// never half of it.
func TestSeveralClients(t *testing.T) {
	f := awsfake.New()
	defer f.Close()
	f.SetFaults(func(fl *awsfake.Faults) { fl.NoCapacityZones = []string{"us-east-1a"} })
	p := newProvider(t, f, func(c *Config) { c.Instances = 4 })
	if p.HourlyCost() != 0 {
		t.Errorf("hourly cost %v with no price", p.HourlyCost())
	}
	s := spec(t)
	s.Clients = 3
	pair, err := p.Up(context.Background(), s)
	if err != nil {
		t.Fatalf("up: %v (calls %v)", err, f.Calls())
	}
	if n := count(f.Calls(), "RunInstances"); n != 2 {
		t.Errorf("RunInstances called %d times, want one refused for capacity and one launch of all four", n)
	}
	hosts := pair.ClientHosts()
	if len(hosts) != 3 || hosts[0] != pair.Client {
		t.Fatalf("clients %v", hosts)
	}
	seen := map[netip.Addr]bool{pair.Server.DataAddr(): true}
	for _, h := range hosts {
		seen[h.DataAddr()] = true
	}
	if len(seen) != 4 {
		t.Errorf("data addresses %v: want four instances", seen)
	}
	var insts []awsfake.Resource
	for _, r := range f.Live() {
		if r.Kind == "instance" {
			insts = append(insts, r)
		}
	}
	sort.Slice(insts, func(i, j int) bool { return insts[i].LaunchIndex < insts[j].LaunchIndex })
	if len(insts) != 4 {
		t.Fatalf("%d live instances, want 4", len(insts))
	}
	for i, in := range insts {
		if in.LaunchIndex != i || in.PlacementGroup != insts[0].PlacementGroup || in.Zone != "us-east-1b" {
			t.Errorf("instance %d: index %d, group %s, zone %s", i, in.LaunchIndex, in.PlacementGroup, in.Zone)
		}
	}
	if pair.Server.DataAddr().String() != insts[0].PrivateIP {
		t.Errorf("server at %v, want launch index 0's %s", pair.Server.DataAddr(), insts[0].PrivateIP)
	}
	if err := p.Down(context.Background()); err != nil {
		t.Fatalf("down: %v", err)
	}
	assertNothingLive(t, f, "after Down")
	terminated := 0
	for _, r := range f.All() {
		if r.Kind == "instance" && r.State == "terminated" {
			terminated++
		}
	}
	if terminated != 4 {
		t.Errorf("%d instances terminated, want 4", terminated)
	}
}
