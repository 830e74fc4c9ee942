// Command awsfake serves the local EC2/SSM fake on 127.0.0.1 until
// interrupted, so `linerate infra up --provider aws --endpoint URL` can be
// tried without AWS. It prints the URL, then the ledger after every change.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/linerate/linerate/infra/aws/awsfake"
)

func main() {
	noCapacity := flag.String("no-capacity", "", "zones without capacity, comma-separated (e.g. us-east-1a)")
	deny := flag.String("deny", "", "IAM actions to refuse, comma-separated (e.g. ec2:RunInstances,sts:DecodeAuthorizationMessage)")
	quota := flag.Float64("vcpu-quota", 0, "the On-Demand vCPU quota of the standard families (default the fake's)")
	flag.Parse()
	f := awsfake.New()
	defer f.Close()
	if *noCapacity != "" {
		f.Faults.NoCapacityZones = strings.Split(*noCapacity, ",")
	}
	if *deny != "" {
		f.Faults.Deny = map[string]bool{}
		for _, a := range strings.Split(*deny, ",") {
			f.Faults.Deny[a] = true
		}
	}
	if *quota > 0 {
		f.Quotas[awsfake.DefaultQuotaCode] = *quota
	}
	f.OnCall = func(action string) {
		fmt.Printf("%s: %d live\n", action, len(f.Live()))
	}
	fmt.Println(f.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
	for _, r := range f.Live() {
		fmt.Printf("still live: %s %s %s\n", r.Kind, r.ID, r.State)
	}
}
