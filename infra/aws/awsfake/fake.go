// Package awsfake is a local stand-in for the parts of the EC2 (query
// protocol, XML answers) and SSM (JSON protocol) APIs that linerate's aws
// provider calls. It listens on 127.0.0.1 only, keeps a ledger of every
// resource it created, and injects faults on request, so tests can check
// that every scenario ends with nothing left running.
package awsfake

import (
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Faults are the failures the fake injects.
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
	// Security groups only: "tcp:22:22 from 203.0.113.7/32", "-1 from sg-…".
	Rules []string

	polls   int
	deleted bool
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
	// HourlyUSD is the fake's on-demand price in us-east-1 for the Price
	// List API; 0 lists no price. Made-up figures: tests only.
	HourlyUSD float64
}

// Fake is the server.
type Fake struct {
	URL    string
	Faults Faults
	// OnCall runs after each action's work, before it answers (tests cancel
	// their context here).
	OnCall func(action string)
	// Zones of the region.
	Zones []string
	Types map[string]InstanceType
	AMIs  map[string]string // SSM parameter name → image ID

	srv   *httptest.Server
	mu    sync.Mutex
	res   []*Resource
	calls []string
	seq   int
	inUse map[string]bool
}

// New starts a fake on 127.0.0.1 with region us-east-1's shape: three
// zones, an arm64 and an x86_64 type, and the AL2023 AMI parameters.
func New() *Fake {
	f := &Fake{
		Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"},
		Types: map[string]InstanceType{
			"c8gn.16xlarge": {Arch: "arm64", VCPUs: 64, HourlyUSD: 1.2345},
			"c7i.large":     {Arch: "x86_64", VCPUs: 2, HourlyUSD: 0.0625},
		},
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

// Calls are the actions received, in order.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Live lists resources that still exist.
func (f *Fake) Live() []Resource {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Resource
	for _, r := range f.res {
		if r.Live() {
			out = append(out, *r)
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
		out = append(out, *r)
	}
	return out
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

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	if t := r.Header.Get("X-Amz-Target"); strings.HasPrefix(t, "AWSPriceListService.") {
		f.servePricing(w, r, strings.TrimPrefix(t, "AWSPriceListService."))
		return
	} else if t != "" {
		f.serveSSM(w, r, t)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	action := r.PostForm.Get("Action")
	f.mu.Lock()
	f.calls = append(f.calls, action)
	var body string
	apiErr := f.throttled(action)
	if apiErr == nil {
		body, apiErr = f.do(action, r.PostForm)
	}
	f.mu.Unlock()
	if f.OnCall != nil {
		f.OnCall(action)
	}
	if f.Faults.HangAfter[action] {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		return
	}
	if apiErr != nil {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(apiErr.status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>req-%d</RequestID></Response>`,
			esc(apiErr.code), esc(apiErr.message), len(f.calls))
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><%sResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>req</requestId>%s</%sResponse>`, action, body, action)
}

func (f *Fake) throttled(action string) *apiError {
	if f.Faults.Throttle[action] > 0 {
		f.Faults.Throttle[action]--
		return &apiError{status: 503, code: "RequestLimitExceeded", message: "Request limit exceeded."}
	}
	return nil
}

func (f *Fake) serveSSM(w http.ResponseWriter, r *http.Request, target string) {
	var in struct{ Name string }
	b, _ := io.ReadAll(r.Body)
	json.Unmarshal(b, &in)
	action := strings.TrimPrefix(target, "AmazonSSM.")
	f.mu.Lock()
	f.calls = append(f.calls, "ssm:"+action)
	apiErr := f.throttled("ssm:" + action)
	ami, ok := f.AMIs[in.Name]
	f.mu.Unlock()
	if f.OnCall != nil {
		f.OnCall("ssm:" + action)
	}
	if f.Faults.HangAfter["ssm:"+action] {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	switch {
	case apiErr != nil:
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"__type":"ThrottlingException","message":"Rate exceeded"}`)
	case action != "GetParameter":
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"__type":"InvalidAction","message":"the fake has no %s"}`, action)
	case !ok:
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"__type":"ParameterNotFound","message":"%s"}`, in.Name)
	default:
		json.NewEncoder(w).Encode(map[string]any{"Parameter": map[string]any{
			"Name": in.Name, "Type": "String", "Value": ami, "Version": 1, "DataType": "aws:ec2:image",
		}})
	}
}

// servePricing answers the Price List API's GetProducts for EC2 with one
// product per known type in us-east-1, shaped as AWS returns it: each
// price list entry is a JSON document in a string.
func (f *Fake) servePricing(w http.ResponseWriter, r *http.Request, action string) {
	var in struct {
		ServiceCode string
		Filters     []struct{ Type, Field, Value string }
	}
	b, _ := io.ReadAll(r.Body)
	json.Unmarshal(b, &in)
	f.mu.Lock()
	f.calls = append(f.calls, "pricing:"+action)
	want := map[string]string{}
	for _, flt := range in.Filters {
		want[flt.Field] = flt.Value
	}
	it, known := f.Types[want["instanceType"]]
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if action != "GetProducts" || in.ServiceCode != "AmazonEC2" {
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"__type":"InvalidParameterException","message":"the fake has only GetProducts for AmazonEC2"}`)
		return
	}
	list := []string{}
	if known && it.HourlyUSD > 0 && want["regionCode"] == "us-east-1" && want["operatingSystem"] == "Linux" && want["tenancy"] == "Shared" {
		doc, _ := json.Marshal(map[string]any{
			"product": map[string]any{"productFamily": "Compute Instance", "sku": "FAKESKU",
				"attributes": map[string]string{"instanceType": want["instanceType"], "regionCode": "us-east-1", "operatingSystem": "Linux"}},
			"terms": map[string]any{"OnDemand": map[string]any{"FAKESKU.JRTCKXETXF": map[string]any{
				"priceDimensions": map[string]any{"FAKESKU.JRTCKXETXF.6YS6EN2CT7": map[string]any{
					"unit": "Hrs", "pricePerUnit": map[string]string{"USD": strconv.FormatFloat(it.HourlyUSD, 'f', 10, 64)}}}}}},
		})
		list = append(list, string(doc))
	}
	json.NewEncoder(w).Encode(map[string]any{"FormatVersion": "aws_v1", "PriceList": list})
}

// list reads Prefix.1, Prefix.2, … .
func list(form map[string][]string, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := form[prefix+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v[0])
	}
}

func get(form map[string][]string, k string) string {
	if v := form[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// tagSpecs reads TagSpecification.N.{ResourceType,Tag.M.Key,Tag.M.Value}.
func tagSpecs(form map[string][]string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for i := 1; ; i++ {
		p := "TagSpecification." + strconv.Itoa(i)
		rt := get(form, p+".ResourceType")
		if rt == "" {
			return out
		}
		tags := map[string]string{}
		for j := 1; ; j++ {
			k := get(form, fmt.Sprintf("%s.Tag.%d.Key", p, j))
			if k == "" {
				break
			}
			tags[k] = get(form, fmt.Sprintf("%s.Tag.%d.Value", p, j))
		}
		out[rt] = tags
	}
}

type filter struct {
	name   string
	values []string
}

func filters(form map[string][]string) []filter {
	var out []filter
	for i := 1; ; i++ {
		p := "Filter." + strconv.Itoa(i)
		n := get(form, p+".Name")
		if n == "" {
			return out
		}
		out = append(out, filter{n, list(form, p+".Value")})
	}
}

func has(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

func (r *Resource) matches(fs []filter) bool {
	for _, fl := range fs {
		switch {
		case fl.name == "tag-key":
			ok := false
			for _, v := range fl.values {
				if _, present := r.Tags[v]; present {
					ok = true
				}
			}
			if !ok {
				return false
			}
		case strings.HasPrefix(fl.name, "tag:"):
			v, present := r.Tags[strings.TrimPrefix(fl.name, "tag:")]
			if !present || !has(fl.values, v) {
				return false
			}
		case fl.name == "instance-state-name":
			if !has(fl.values, r.State) {
				return false
			}
		default:
			return false // an unknown filter must not silently match
		}
	}
	return true
}

var knownFilter = regexp.MustCompile(`^(tag-key|tag:.+|instance-state-name)$`)

func (f *Fake) find(kind string, pred func(*Resource) bool) *Resource {
	for _, r := range f.res {
		if r.Kind == kind && r.Live() && pred(r) {
			return r
		}
	}
	return nil
}

func (f *Fake) do(action string, form map[string][]string) (string, *apiError) {
	for _, fl := range filters(form) {
		if !knownFilter.MatchString(fl.name) {
			return "", errf("InvalidParameterValue", "the fake does not know filter %s", fl.name)
		}
	}
	switch action {
	case "DescribeInstanceTypes":
		var b strings.Builder
		for _, t := range list(form, "InstanceType") {
			it, ok := f.Types[t]
			if !ok {
				return "", errf("InvalidInstanceType", "The following supplied instance types do not exist: [%s]", t)
			}
			fmt.Fprintf(&b, `<item><instanceType>%s</instanceType><processorInfo><supportedArchitectures><item>%s</item></supportedArchitectures></processorInfo><vCpuInfo><defaultVCpus>%d</defaultVCpus></vCpuInfo></item>`, t, it.Arch, it.VCPUs)
		}
		return "<instanceTypeSet>" + b.String() + "</instanceTypeSet>", nil

	case "DescribeAvailabilityZones":
		var b strings.Builder
		for _, z := range f.Zones {
			fmt.Fprintf(&b, `<item><zoneName>%s</zoneName><zoneState>available</zoneState><zoneType>availability-zone</zoneType><regionName>us-east-1</regionName></item>`, z)
		}
		return "<availabilityZoneInfo>" + b.String() + "</availabilityZoneInfo>", nil

	case "ImportKeyPair", "CreateKeyPair":
		name := get(form, "KeyName")
		if f.find("key-pair", func(r *Resource) bool { return r.Name == name }) != nil {
			return "", errf("InvalidKeyPair.Duplicate", "The keypair '%s' already exists.", name)
		}
		if action == "ImportKeyPair" {
			if _, err := base64.StdEncoding.DecodeString(get(form, "PublicKeyMaterial")); err != nil {
				return "", errf("InvalidKey.Format", "Key is not in valid OpenSSH public key format")
			}
		}
		r := &Resource{Kind: "key-pair", ID: f.newID("key"), Name: name, Tags: tagSpecs(form)["key-pair"]}
		f.res = append(f.res, r)
		body := fmt.Sprintf("<keyName>%s</keyName><keyPairId>%s</keyPairId><keyFingerprint>SHA256:fake</keyFingerprint>", esc(name), r.ID)
		if action == "CreateKeyPair" {
			body += "<keyMaterial>-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n-----END OPENSSH PRIVATE KEY-----</keyMaterial>"
		}
		return body, nil

	case "DescribeKeyPairs":
		var b strings.Builder
		fs := filters(form)
		for _, r := range f.res {
			if r.Kind == "key-pair" && r.Live() && r.matches(fs) {
				fmt.Fprintf(&b, "<item><keyName>%s</keyName><keyPairId>%s</keyPairId>%s</item>", esc(r.Name), r.ID, tagSet(r.Tags))
			}
		}
		return "<keySet>" + b.String() + "</keySet>", nil

	case "DeleteKeyPair":
		id, name := get(form, "KeyPairId"), get(form, "KeyName")
		r := f.find("key-pair", func(r *Resource) bool { return r.ID == id || (id == "" && r.Name == name) })
		if r == nil {
			return "<return>true</return>", nil // EC2 answers true for a missing key
		}
		if e := f.inUseOnce(r); e != nil {
			return "", e
		}
		r.deleted = true
		return "<return>true</return>", nil

	case "CreatePlacementGroup":
		name := get(form, "GroupName")
		if f.find("placement-group", func(r *Resource) bool { return r.Name == name }) != nil {
			return "", errf("InvalidPlacementGroup.Duplicate", "The Placement Group '%s' already exists.", name)
		}
		if get(form, "Strategy") != "cluster" {
			return "", errf("InvalidParameterValue", "the fake only makes cluster groups, got %q", get(form, "Strategy"))
		}
		st := "available"
		if f.Faults.PlacementPendingPolls > 0 {
			st = "pending"
		}
		r := &Resource{Kind: "placement-group", ID: f.newID("pg"), Name: name, State: st, Tags: tagSpecs(form)["placement-group"]}
		f.res = append(f.res, r)
		return "<placementGroup>" + pgXML(r) + "</placementGroup>", nil

	case "DescribePlacementGroups":
		names := list(form, "GroupName")
		fs := filters(form)
		var b strings.Builder
		for _, r := range f.res {
			if r.Kind != "placement-group" || !r.Live() || !r.matches(fs) || (len(names) > 0 && !has(names, r.Name)) {
				continue
			}
			if r.State == "pending" {
				r.polls++
				if r.polls > f.Faults.PlacementPendingPolls {
					r.State = "available"
				}
			}
			b.WriteString("<item>" + pgXML(r) + "</item>")
		}
		if len(names) > 0 && b.Len() == 0 {
			return "", errf("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", names[0])
		}
		return "<placementGroupSet>" + b.String() + "</placementGroupSet>", nil

	case "DeletePlacementGroup":
		name := get(form, "GroupName")
		r := f.find("placement-group", func(r *Resource) bool { return r.Name == name })
		if r == nil {
			return "", errf("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", name)
		}
		if f.find("instance", func(i *Resource) bool { return i.PlacementGroup == name }) != nil {
			return "", errf("InvalidPlacementGroup.InUse", "The placement group '%s' is in use and may not be deleted.", name)
		}
		if e := f.inUseOnce(r); e != nil {
			return "", e
		}
		r.deleted = true
		return "", nil

	case "CreateSecurityGroup":
		name := get(form, "GroupName")
		if f.find("security-group", func(r *Resource) bool { return r.Name == name }) != nil {
			return "", errf("InvalidGroup.Duplicate", "The security group '%s' already exists for VPC 'vpc-fake'", name)
		}
		if get(form, "GroupDescription") == "" {
			return "", errf("MissingParameter", "The request must contain the parameter GroupDescription")
		}
		r := &Resource{Kind: "security-group", ID: f.newID("sg"), Name: name, Tags: tagSpecs(form)["security-group"]}
		f.res = append(f.res, r)
		return "<groupId>" + r.ID + "</groupId>", nil

	case "AuthorizeSecurityGroupIngress":
		id := get(form, "GroupId")
		r := f.find("security-group", func(r *Resource) bool { return r.ID == id })
		if r == nil {
			return "", errf("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
		for i := 1; ; i++ {
			p := "IpPermissions." + strconv.Itoa(i)
			proto := get(form, p+".IpProtocol")
			if proto == "" {
				break
			}
			rng := proto
			if proto != "-1" {
				rng = fmt.Sprintf("%s:%s:%s", proto, get(form, p+".FromPort"), get(form, p+".ToPort"))
			}
			for j := 1; ; j++ {
				c := get(form, fmt.Sprintf("%s.IpRanges.%d.CidrIp", p, j))
				if c == "" {
					break
				}
				r.Rules = append(r.Rules, rng+" from "+c)
			}
			for j := 1; ; j++ {
				g := get(form, fmt.Sprintf("%s.Groups.%d.GroupId", p, j))
				if g == "" {
					break
				}
				r.Rules = append(r.Rules, rng+" from "+g)
			}
		}
		return "<return>true</return>", nil

	case "DescribeSecurityGroups":
		var b strings.Builder
		fs := filters(form)
		for _, r := range f.res {
			if r.Kind == "security-group" && r.Live() && r.matches(fs) {
				fmt.Fprintf(&b, "<item><groupId>%s</groupId><groupName>%s</groupName>%s</item>", r.ID, esc(r.Name), tagSet(r.Tags))
			}
		}
		return "<securityGroupInfo>" + b.String() + "</securityGroupInfo>", nil

	case "DeleteSecurityGroup":
		id := get(form, "GroupId")
		r := f.find("security-group", func(r *Resource) bool { return r.ID == id })
		if r == nil {
			return "", errf("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
		if f.find("instance", func(i *Resource) bool { return i.SecurityGroup == id }) != nil {
			return "", errf("DependencyViolation", "resource %s has a dependent object", id)
		}
		if e := f.inUseOnce(r); e != nil {
			return "", e
		}
		r.deleted = true
		return "<return>true</return><groupId>" + id + "</groupId>", nil

	case "RunInstances":
		return f.runInstances(form)

	case "DescribeInstances":
		ids := list(form, "InstanceId")
		fs := filters(form)
		var b strings.Builder
		for _, id := range ids {
			if f.instance(id) == nil {
				return "", errf("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
			}
		}
		for _, r := range f.res {
			if r.Kind != "instance" || !r.matches(fs) || (len(ids) > 0 && !has(ids, r.ID)) {
				continue
			}
			f.advance(r)
			b.WriteString("<item><reservationId>r-fake</reservationId><ownerId>000000000000</ownerId><instancesSet><item>" + instXML(r) + "</item></instancesSet></item>")
		}
		return "<reservationSet>" + b.String() + "</reservationSet>", nil

	case "TerminateInstances":
		var b strings.Builder
		for _, id := range list(form, "InstanceId") {
			r := f.instance(id)
			if r == nil {
				return "", errf("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
			}
			prev := r.State
			if r.State != "terminated" {
				r.State, r.polls = "shutting-down", 0
			}
			fmt.Fprintf(&b, "<item><instanceId>%s</instanceId><previousState><code>16</code><name>%s</name></previousState><currentState><code>32</code><name>%s</name></currentState></item>", id, prev, r.State)
		}
		return "<instancesSet>" + b.String() + "</instancesSet>", nil
	}
	return "", errf("InvalidAction", "The action %s is not valid for this web service (the fake has no %s).", action, action)
}

func (f *Fake) inUseOnce(r *Resource) *apiError {
	if f.Faults.InUseOnce[r.Kind] && !f.inUse[r.ID] {
		f.inUse[r.ID] = true
		if r.Kind == "placement-group" {
			return errf("InvalidPlacementGroup.InUse", "The placement group '%s' is in use and may not be deleted.", r.Name)
		}
		return errf("DependencyViolation", "resource %s has a dependent object", r.ID)
	}
	return nil
}

func (f *Fake) instance(id string) *Resource {
	for _, r := range f.res {
		if r.Kind == "instance" && r.ID == id {
			return r
		}
	}
	return nil
}

// advance moves an instance along its life on each look: pending becomes
// running on the second look, shutting-down becomes terminated.
func (f *Fake) advance(r *Resource) {
	r.polls++
	switch r.State {
	case "pending":
		if !f.Faults.NeverRunning && r.polls >= 2 {
			r.State = "running"
			// Loopback: nothing that follows an answer of the fake can leave
			// this machine (a real SSH wait dials the public address).
			r.PublicIP = fmt.Sprintf("127.1.0.%d", 10+f.seq%200)
			r.PrivateIP = fmt.Sprintf("172.31.0.%d", 10+r.LaunchIndex)
			f.seq++
		}
	case "shutting-down":
		if r.polls >= 2 {
			r.State = "terminated"
		}
	}
}

func (f *Fake) runInstances(form map[string][]string) (string, *apiError) {
	zone := get(form, "Placement.AvailabilityZone")
	pg := get(form, "Placement.GroupName")
	itype := get(form, "InstanceType")
	it, ok := f.Types[itype]
	switch {
	case !ok:
		return "", errf("InvalidParameterValue", "Invalid value '%s' for InstanceType.", itype)
	case get(form, "MinCount") != "2" || get(form, "MaxCount") != "2":
		return "", errf("InvalidParameterValue", "the fake wants MinCount=MaxCount=2 (all or nothing), got %s/%s", get(form, "MinCount"), get(form, "MaxCount"))
	case !has(f.Zones, zone):
		return "", errf("InvalidParameterValue", "Invalid availability zone: [%s]", zone)
	}
	wantAMI := f.AMIs["/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-"+it.Arch]
	if ami := get(form, "ImageId"); ami != wantAMI {
		return "", errf("InvalidParameterValue", "image %s is not the %s AMI %s", ami, it.Arch, wantAMI)
	}
	g := f.find("placement-group", func(r *Resource) bool { return r.Name == pg })
	if g == nil {
		return "", errf("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", pg)
	}
	if g.State != "available" {
		return "", errf("InvalidPlacementGroup.InUse", "The placement group '%s' is not available yet.", pg)
	}
	sgs := list(form, "SecurityGroupId")
	if len(sgs) != 1 || f.find("security-group", func(r *Resource) bool { return r.ID == sgs[0] }) == nil {
		return "", errf("InvalidGroup.NotFound", "security groups %v do not exist", sgs)
	}
	key := get(form, "KeyName")
	if f.find("key-pair", func(r *Resource) bool { return r.Name == key }) == nil {
		return "", errf("InvalidKeyPair.NotFound", "The key pair '%s' does not exist", key)
	}
	if has(f.Faults.NoCapacityZones, zone) {
		return "", errf("InsufficientInstanceCapacity", "We currently do not have sufficient %s capacity in the Availability Zone you requested (%s).", itype, zone)
	}
	ud, _ := base64.StdEncoding.DecodeString(get(form, "UserData"))
	tags := tagSpecs(form)
	var b strings.Builder
	for i := 0; i < 2; i++ {
		r := &Resource{Kind: "instance", ID: f.newID("i"), State: "pending", Tags: tags["instance"], Zone: zone,
			SecurityGroup: sgs[0], PlacementGroup: pg, KeyName: key, ImageID: get(form, "ImageId"), InstanceType: itype,
			LaunchIndex: i, UserData: string(ud), ShutdownBehavior: get(form, "InstanceInitiatedShutdownBehavior")}
		f.res = append(f.res, r)
		b.WriteString("<item>" + instXML(r) + "</item>")
	}
	return "<reservationId>r-fake</reservationId><ownerId>000000000000</ownerId><instancesSet>" + b.String() + "</instancesSet>", nil
}

var stateCode = map[string]int{"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48}

func instXML(r *Resource) string {
	s := fmt.Sprintf("<instanceId>%s</instanceId><imageId>%s</imageId><instanceType>%s</instanceType><amiLaunchIndex>%d</amiLaunchIndex><instanceState><code>%d</code><name>%s</name></instanceState><placement><availabilityZone>%s</availabilityZone><groupName>%s</groupName></placement>",
		r.ID, r.ImageID, r.InstanceType, r.LaunchIndex, stateCode[r.State], r.State, r.Zone, esc(r.PlacementGroup))
	if r.State == "running" {
		s += fmt.Sprintf("<privateIpAddress>%s</privateIpAddress><ipAddress>%s</ipAddress>", r.PrivateIP, r.PublicIP)
	}
	return s + tagSet(r.Tags)
}

func pgXML(r *Resource) string {
	return fmt.Sprintf("<groupName>%s</groupName><groupId>%s</groupId><state>%s</state><strategy>cluster</strategy>%s", esc(r.Name), r.ID, r.State, tagSet(r.Tags))
}

func tagSet(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("<tagSet>")
	for _, k := range keys {
		fmt.Fprintf(&b, "<item><key>%s</key><value>%s</value></item>", esc(k), esc(tags[k]))
	}
	b.WriteString("</tagSet>")
	return b.String()
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
