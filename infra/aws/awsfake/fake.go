// Package awsfake is a local stand-in for the parts of the EC2 (query
// protocol, XML answers) and SSM (JSON protocol) APIs that linerate's aws
// provider calls. It listens on 127.0.0.1 only, keeps a ledger of every
// resource it created, and injects faults on request, so tests can check
// that every scenario ends with nothing left running.
package awsfake

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Faults are the failures the fake injects.
// MaxInstances is the most one RunInstances of the fake launches: a
// server and sixteen clients.
const MaxInstances = 17

type Faults struct {
	// NoCapacityZones answer RunInstances with InsufficientInstanceCapacity.
	NoCapacityZones []string
	// Throttle answers the first N calls of an action with
	// RequestLimitExceeded (the SDK retries those).
	Throttle map[string]int
	// PlacementPendingPolls is how many DescribePlacementGroups calls see a
	// new group as pending before it becomes available.
	PlacementPendingPolls int
	// NeverRunning keeps launched instances pending forever.
	NeverRunning bool
	// InUseOnce fails the first delete of a resource kind
	// ("security-group", "placement-group", "key-pair") with an in-use error
	// even when nothing uses it.
	InUseOnce map[string]bool
	// HangAfter makes an action do its work and then not answer until the
	// client gives up (its context is cancelled): a request that reached
	// AWS but whose answer never arrived.
	HangAfter map[string]bool
	// DropReply makes the next N calls of an action do their work and
	// then close the connection without an answer: a reply lost on the
	// way back. The SDK sends the request again.
	DropReply map[string]int
	// NotFoundLooks makes a new instance unknown, by launch index, for
	// its first N calls that name its ID (DescribeInstances,
	// TerminateInstances, CreateTags answer InvalidInstanceID.NotFound):
	// EC2's eventual consistency right after RunInstances.
	NotFoundLooks map[int]int
	// TagListLag leaves a new instance out of its first N listings by
	// filter (tag or state): a resource that is listed by tag only later.
	TagListLag int
	// FailDelete answers every delete of a resource kind with this error
	// code (e.g. UnauthorizedOperation), which no retry fixes.
	FailDelete map[string]string

	// Deny refuses IAM actions ("ec2:RunInstances",
	// "servicequotas:GetServiceQuota", "sts:DecodeAuthorizationMessage")
	// as AWS does a policy that lacks them: EC2 with UnauthorizedOperation
	// and an encoded message (DryRun or not), the others with their
	// access-denied codes.
	Deny map[string]bool
	// NotOffered are the zones where an instance type is not offered, by
	// type: DescribeInstanceTypeOfferings leaves them out and RunInstances
	// there answers Unsupported.
	NotOffered map[string][]string
	// DryRunChecksExistence makes a dry run of RunInstances check, before
	// the permission, that the placement group, key pair and security
	// group it names exist (as EC2 may).
	DryRunChecksExistence bool
	// ImageArch gives an image another architecture than the AMI
	// parameter it is named by says (DescribeImages, RunInstances).
	ImageArch map[string]string
}

// Resource is one ledger entry.
type Resource struct {
	Kind  string // instance, placement-group, security-group, key-pair
	ID    string
	Name  string
	State string // instances: pending, running, shutting-down, terminated; groups: pending, available
	Tags  map[string]string
	// Instances only.
	Zone, SecurityGroup, PlacementGroup, KeyName, ImageID, InstanceType string
	LaunchIndex                                                         int
	PublicIP, PrivateIP                                                 string
	UserData                                                            string
	ShutdownBehavior                                                    string
	ClientToken                                                         string
	// Security groups only: "tcp:22:22 from 203.0.113.7/32", "-1 from sg-…".
	Rules []string
	// Creator is the access key ID that made the resource; Touched lists
	// every change made to it since, as "Action by ACCESS-KEY-ID": whose
	// call ended or retagged it.
	Creator string
	Touched []string

	polls    int
	looks    int // calls that named the instance's ID
	hidden   int // looks that answer NotFound (Faults.NotFoundLooks)
	listings int // listings by filter that could have shown it
	listLag  int // listings that leave it out (Faults.TagListLag)
	deleted  bool
}

// Live reports whether the resource still exists (costs money, blocks names).
func (r *Resource) Live() bool {
	if r.Kind == "instance" {
		return r.State != "terminated"
	}
	return !r.deleted
}

// InstanceType is one type the fake offers.
type InstanceType struct {
	Arch  string // arm64 or x86_64
	VCPUs int
	// Network is the network performance EC2 states, e.g. "200 Gigabit".
	Network string
	// ENA is the ENA support: required, supported or unsupported.
	ENA string
	// QuotaCode is the Service Quotas code of the On-Demand vCPU quota
	// the type counts against; "" is L-1216C47A (standard families).
	QuotaCode string
	// HourlyUSD is the fake's on-demand price in us-east-1 for the Price
	// List API; 0 lists no price. Made-up figures: tests only.
	HourlyUSD float64
}

// Call is one request the fake received.
type Call struct {
	// Action is EC2's action name ("RunInstances"), or another service's
	// with its IAM prefix ("ssm:GetParameter", "servicequotas:…", "sts:…").
	Action string
	// DryRun: the call asked only whether it would succeed.
	DryRun bool
	// Key is the access key ID that signed the request; Token its
	// session token (X-Amz-Security-Token), if any.
	Key, Token string

	service string // the signature's service: ec2, sts, …
}

// Fake is the server.
type Fake struct {
	URL    string
	Faults Faults
	// OnCall runs after each action's work, before it answers (tests cancel
	// their context here).
	OnCall func(action string)
	// OnCallBy is OnCall with the caller's access key ID.
	OnCallBy func(action, key string)
	// Zones of the region.
	Zones []string
	Types map[string]InstanceType
	AMIs  map[string]string // SSM parameter name → image ID
	// Quotas are the account's Service Quotas values for EC2, by quota
	// code (On-Demand vCPUs); a code not listed is unknown
	// (NoSuchResourceException).
	Quotas map[string]float64

	srv    *httptest.Server
	mu     sync.Mutex
	res    []*Resource
	calls  []Call
	seq    int
	inUse  map[string]bool
	perKey map[string]*Faults // SetFaultsFor
	caller string             // of the call being served: Creator, Touched
	cur    *Faults            // the faults for that call
}

// New starts a fake on 127.0.0.1 with region us-east-1's shape: three
// zones, an arm64 and an x86_64 type, and the AL2023 AMI parameters.
func New() *Fake {
	f := &Fake{
		Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"},
		Types: map[string]InstanceType{
			"c8gn.16xlarge": {Arch: "arm64", VCPUs: 64, HourlyUSD: 1.2345, Network: "200 Gigabit", ENA: "required"},
			"c7i.large":     {Arch: "x86_64", VCPUs: 2, HourlyUSD: 0.0625, Network: "Up to 12.5 Gigabit", ENA: "required"},
		},
		Quotas: map[string]float64{"L-1216C47A": 640},
		AMIs: map[string]string{
			"/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64":  "ami-0a1b2c3d4e5f60001",
			"/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64": "ami-0a1b2c3d4e5f60002",
		},
		inUse: map[string]bool{},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL
	return f
}

// Close stops the server.
func (f *Fake) Close() { f.srv.Close() }

// SetFaults changes the faults while calls may be arriving.
func (f *Fake) SetFaults(edit func(*Faults)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	edit(&f.Faults)
}

// SetFaultsFor gives the calls signed with access key ID key their own
// faults instead of Faults: a test runs several clients side by side, each
// with its own.
func (f *Fake) SetFaultsFor(key string, fl Faults) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.perKey == nil {
		f.perKey = map[string]*Faults{}
	}
	f.perKey[key] = &fl
}

// begin notes the call being served (f.mu held).
func (f *Fake) begin(c Call) {
	f.calls = append(f.calls, c)
	f.caller, f.cur = c.Key, &f.Faults
	if fl := f.perKey[c.Key]; fl != nil {
		f.cur = fl
	}
}

// IAMActions are the IAM actions of the calls received, in order: EC2's
// with their "ec2:" prefix. A dry run is the action it asks about.
func (f *Fake) IAMActions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.calls))
	for i, c := range f.calls {
		out[i] = iamAction(c.Action)
	}
	return out
}

func iamAction(action string) string {
	if strings.Contains(action, ":") {
		return action
	}
	return "ec2:" + action
}

// Calls are the actions received, in order.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.calls))
	for i, c := range f.calls {
		out[i] = c.Action
	}
	return out
}

// CallsBy are the requests received, in order, with their signers.
func (f *Fake) CallsBy() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Live lists resources that still exist.
func (f *Fake) Live() []Resource {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Resource
	for _, r := range f.res {
		if r.Live() {
			out = append(out, r.copy())
		}
	}
	return out
}

// All lists every resource ever created.
func (f *Fake) All() []Resource {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Resource
	for _, r := range f.res {
		out = append(out, r.copy())
	}
	return out
}

// Retag sets tags on a resource in the ledger directly (a test ages a
// resource, as if it had been made long ago).
func (f *Fake) Retag(id string, tags map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.res {
		if r.ID == id {
			for k, v := range tags {
				r.Tags[k] = v
			}
		}
	}
}

func (r *Resource) copy() Resource {
	c := *r
	c.Tags = make(map[string]string, len(r.Tags))
	for k, v := range r.Tags {
		c.Tags[k] = v
	}
	c.Rules = append([]string(nil), r.Rules...)
	c.Touched = append([]string(nil), r.Touched...)
	return c
}

// Add puts a resource in the ledger directly (leftovers of an earlier run).
func (f *Fake) Add(r Resource) *Resource {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.ID == "" {
		r.ID = f.newID(map[string]string{"instance": "i", "security-group": "sg", "placement-group": "pg", "key-pair": "key"}[r.Kind])
	}
	if r.Tags == nil {
		r.Tags = map[string]string{}
	}
	p := &r
	f.res = append(f.res, p)
	return p
}

func (f *Fake) newID(prefix string) string {
	f.seq++
	return fmt.Sprintf("%s-%017x", prefix, 0xf00d000+f.seq)
}

// apiError is an EC2 or SSM error answer.
type apiError struct {
	status  int
	code    string
	message string
}

func errf(code, format string, args ...any) *apiError {
	return &apiError{status: 400, code: code, message: fmt.Sprintf(format, args...)}
}

// signer reads the access key ID and session token a request was signed
// with, and the service it was signed for (SigV4:
// "Credential=AKID/date/region/service/aws4_request").
var credential = regexp.MustCompile(`Credential=([^/,\s]+)/[^/]+/[^/]+/([^/]+)/`)

func signer(r *http.Request) Call {
	var c Call
	if m := credential.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		c.Key, c.service = m[1], m[2]
	}
	c.Token = r.Header.Get("X-Amz-Security-Token")
	return c
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	if t := r.Header.Get("X-Amz-Target"); strings.HasPrefix(t, "AWSPriceListService.") {
		f.servePricing(w, r, strings.TrimPrefix(t, "AWSPriceListService."))
		return
	} else if strings.HasPrefix(t, "ServiceQuotasV20190624.") {
		f.serveQuotas(w, r, strings.TrimPrefix(t, "ServiceQuotasV20190624."))
		return
	} else if t != "" {
		f.serveSSM(w, r, t)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	call := signer(r)
	if call.service == "sts" {
		f.serveSTS(w, r, call)
		return
	}
	call.Action = r.PostForm.Get("Action")
	call.DryRun = r.PostForm.Get("DryRun") == "true"
	action := call.Action
	f.mu.Lock()
	f.begin(call)
	n := len(f.calls)
	var body string
	apiErr := f.throttled(action)
	if apiErr == nil {
		apiErr = f.denied(iamAction(action))
	}
	if apiErr == nil && call.DryRun {
		apiErr = f.dryRun(action, r.PostForm)
	}
	if apiErr == nil {
		body, apiErr = f.do(action, r.PostForm)
	}
	hang := f.cur.HangAfter[action]
	drop := f.cur.DropReply[action] > 0
	if drop {
		f.cur.DropReply[action]--
	}
	f.mu.Unlock()
	f.after(call)
	switch {
	case hang:
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		return
	case drop:
		dropConnection(w)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	if apiErr != nil {
		w.WriteHeader(apiErr.status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>req-%d</RequestID></Response>`,
			esc(apiErr.code), esc(apiErr.message), n)
		return
	}
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><%sResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>req</requestId>%s</%sResponse>`, action, body, action)
}

// after runs the test's hooks for a call that was served.
func (f *Fake) after(c Call) {
	if f.OnCall != nil {
		f.OnCall(c.Action)
	}
	if f.OnCallBy != nil {
		f.OnCallBy(c.Action, c.Key)
	}
}

// dropConnection closes the client's connection with no answer at all.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // net/http closes the connection
}

func (f *Fake) throttled(action string) *apiError {
	if f.cur.Throttle[action] > 0 {
		f.cur.Throttle[action]--
		return &apiError{status: 503, code: "RequestLimitExceeded", message: "Request limit exceeded."}
	}
	return nil
}
