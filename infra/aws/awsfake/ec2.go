package awsfake

import (
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

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

// ec2Action answers one EC2 action: the response body, or its error.
type ec2Action func(f *Fake, action string, form map[string][]string) (string, *apiError)

// ec2Actions is every action the fake answers.
var ec2Actions = map[string]ec2Action{
	"DescribeInstanceTypes":         (*Fake).ec2DescribeInstanceTypes,
	"DescribeInstanceTypeOfferings": formOnly((*Fake).describeOfferings),
	"DescribeImages":                formOnly((*Fake).describeImages),
	"DescribeAvailabilityZones":     (*Fake).ec2DescribeAvailabilityZones,
	"ImportKeyPair":                 (*Fake).ec2ImportOrCreateKeyPair,
	"CreateKeyPair":                 (*Fake).ec2ImportOrCreateKeyPair,
	"DescribeKeyPairs":              (*Fake).ec2DescribeKeyPairs,
	"DeleteKeyPair":                 (*Fake).ec2DeleteKeyPair,
	"CreatePlacementGroup":          (*Fake).ec2CreatePlacementGroup,
	"DescribePlacementGroups":       (*Fake).ec2DescribePlacementGroups,
	"DeletePlacementGroup":          (*Fake).ec2DeletePlacementGroup,
	"CreateSecurityGroup":           (*Fake).ec2CreateSecurityGroup,
	"AuthorizeSecurityGroupIngress": (*Fake).ec2AuthorizeSecurityGroupIngress,
	"DescribeSecurityGroups":        (*Fake).ec2DescribeSecurityGroups,
	"DeleteSecurityGroup":           (*Fake).ec2DeleteSecurityGroup,
	"RunInstances":                  formOnly((*Fake).runInstances),
	"DescribeInstances":             (*Fake).ec2DescribeInstances,
	"TerminateInstances":            (*Fake).ec2TerminateInstances,
	"CreateTags":                    formOnly((*Fake).createTags),
}

// formOnly is an action whose answer needs only its form.
func formOnly(h func(*Fake, map[string][]string) (string, *apiError)) ec2Action {
	return func(f *Fake, _ string, form map[string][]string) (string, *apiError) { return h(f, form) }
}

// do answers one EC2 action from its form, after refusing filters the
// fake does not know.
func (f *Fake) do(action string, form map[string][]string) (string, *apiError) {
	for _, fl := range filters(form) {
		if !knownFilter.MatchString(fl.name) && action != "DescribeInstanceTypeOfferings" {
			return "", errf("InvalidParameterValue", "the fake does not know filter %s", fl.name)
		}
	}
	h, ok := ec2Actions[action]
	if !ok {
		return "", errf("InvalidAction", "The action %s is not valid for this web service (the fake has no %s).", action, action)
	}
	return h(f, action, form)
}

// ec2DescribeInstanceTypes answers DescribeInstanceTypes.
func (f *Fake) ec2DescribeInstanceTypes(action string, form map[string][]string) (string, *apiError) {
	var b strings.Builder
	for _, t := range list(form, "InstanceType") {
		it, ok := f.Types[t]
		if !ok {
			return "", errf("InvalidInstanceType", "The following supplied instance types do not exist: [%s]", t)
		}
		fmt.Fprintf(&b, `<item><instanceType>%s</instanceType><processorInfo><supportedArchitectures><item>%s</item></supportedArchitectures></processorInfo><vCpuInfo><defaultVCpus>%d</defaultVCpus></vCpuInfo><networkInfo><networkPerformance>%s</networkPerformance><enaSupport>%s</enaSupport></networkInfo></item>`,
			esc(t), esc(it.Arch), it.VCPUs, esc(it.Network), esc(it.ENA))
	}
	return "<instanceTypeSet>" + b.String() + "</instanceTypeSet>", nil
}

// ec2DescribeAvailabilityZones answers DescribeAvailabilityZones.
func (f *Fake) ec2DescribeAvailabilityZones(action string, form map[string][]string) (string, *apiError) {
	var b strings.Builder
	for _, z := range f.Zones {
		fmt.Fprintf(&b, `<item><zoneName>%s</zoneName><zoneState>available</zoneState><zoneType>availability-zone</zoneType><regionName>us-east-1</regionName></item>`, z)
	}
	return "<availabilityZoneInfo>" + b.String() + "</availabilityZoneInfo>", nil
}

// ec2ImportOrCreateKeyPair answers ImportKeyPair and CreateKeyPair.
func (f *Fake) ec2ImportOrCreateKeyPair(action string, form map[string][]string) (string, *apiError) {
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
	f.keep(r)
	body := fmt.Sprintf("<keyName>%s</keyName><keyPairId>%s</keyPairId><keyFingerprint>SHA256:fake</keyFingerprint>", esc(name), r.ID)
	if action == "CreateKeyPair" {
		body += "<keyMaterial>-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n-----END OPENSSH PRIVATE KEY-----</keyMaterial>"
	}
	return body, nil
}

// ec2DescribeKeyPairs answers DescribeKeyPairs.
func (f *Fake) ec2DescribeKeyPairs(action string, form map[string][]string) (string, *apiError) {
	var b strings.Builder
	fs := filters(form)
	for _, r := range f.res {
		if r.Kind == "key-pair" && r.Live() && r.matches(fs) {
			fmt.Fprintf(&b, "<item><keyName>%s</keyName><keyPairId>%s</keyPairId>%s</item>", esc(r.Name), r.ID, tagSet(r.Tags))
		}
	}
	return "<keySet>" + b.String() + "</keySet>", nil
}

// ec2DeleteKeyPair answers DeleteKeyPair.
func (f *Fake) ec2DeleteKeyPair(action string, form map[string][]string) (string, *apiError) {
	id, name := get(form, "KeyPairId"), get(form, "KeyName")
	r := f.find("key-pair", func(r *Resource) bool { return r.ID == id || (id == "" && r.Name == name) })
	if r == nil {
		return "<return>true</return>", nil // EC2 answers true for a missing key
	}
	if e := f.remove(r, action, nil); e != nil {
		return "", e
	}
	return "<return>true</return>", nil
}

// ec2CreatePlacementGroup answers CreatePlacementGroup.
func (f *Fake) ec2CreatePlacementGroup(action string, form map[string][]string) (string, *apiError) {
	name := get(form, "GroupName")
	if f.find("placement-group", func(r *Resource) bool { return r.Name == name }) != nil {
		return "", errf("InvalidPlacementGroup.Duplicate", "The Placement Group '%s' already exists.", name)
	}
	if get(form, "Strategy") != "cluster" {
		return "", errf("InvalidParameterValue", "the fake only makes cluster groups, got %q", get(form, "Strategy"))
	}
	st := "available"
	if f.cur.PlacementPendingPolls > 0 {
		st = "pending"
	}
	r := &Resource{Kind: "placement-group", ID: f.newID("pg"), Name: name, State: st, Tags: tagSpecs(form)["placement-group"]}
	f.keep(r)
	return "<placementGroup>" + pgXML(r) + "</placementGroup>", nil
}

// ec2DescribePlacementGroups answers DescribePlacementGroups.
func (f *Fake) ec2DescribePlacementGroups(action string, form map[string][]string) (string, *apiError) {
	names := list(form, "GroupName")
	fs := filters(form)
	var b strings.Builder
	for _, r := range f.res {
		if r.Kind != "placement-group" || !r.Live() || !r.matches(fs) || (len(names) > 0 && !has(names, r.Name)) {
			continue
		}
		if r.State == "pending" {
			r.polls++
			if r.polls > f.cur.PlacementPendingPolls {
				r.State = "available"
			}
		}
		b.WriteString("<item>" + pgXML(r) + "</item>")
	}
	if len(names) > 0 && b.Len() == 0 {
		return "", errf("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", names[0])
	}
	return "<placementGroupSet>" + b.String() + "</placementGroupSet>", nil
}

// ec2DeletePlacementGroup answers DeletePlacementGroup.
func (f *Fake) ec2DeletePlacementGroup(action string, form map[string][]string) (string, *apiError) {
	name := get(form, "GroupName")
	r := f.find("placement-group", func(r *Resource) bool { return r.Name == name })
	if r == nil {
		return "", errf("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", name)
	}
	var blocked *apiError
	if f.find("instance", func(i *Resource) bool { return i.PlacementGroup == name }) != nil {
		blocked = errf("InvalidPlacementGroup.InUse", "The placement group '%s' is in use and may not be deleted.", name)
	}
	return "", f.remove(r, action, blocked)
}

// ec2CreateSecurityGroup answers CreateSecurityGroup.
func (f *Fake) ec2CreateSecurityGroup(action string, form map[string][]string) (string, *apiError) {
	name := get(form, "GroupName")
	if f.find("security-group", func(r *Resource) bool { return r.Name == name }) != nil {
		return "", errf("InvalidGroup.Duplicate", "The security group '%s' already exists for VPC 'vpc-fake'", name)
	}
	if get(form, "GroupDescription") == "" {
		return "", errf("MissingParameter", "The request must contain the parameter GroupDescription")
	}
	r := &Resource{Kind: "security-group", ID: f.newID("sg"), Name: name, Tags: tagSpecs(form)["security-group"]}
	f.keep(r)
	return "<groupId>" + r.ID + "</groupId>", nil
}

// ec2AuthorizeSecurityGroupIngress answers AuthorizeSecurityGroupIngress.
func (f *Fake) ec2AuthorizeSecurityGroupIngress(action string, form map[string][]string) (string, *apiError) {
	id := get(form, "GroupId")
	r := f.find("security-group", func(r *Resource) bool { return r.ID == id })
	if r == nil {
		return "", errf("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
	}
	var rules []string
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
		for _, src := range [][2]string{{"IpRanges", "CidrIp"}, {"Ipv6Ranges", "CidrIpv6"}, {"Groups", "GroupId"}} {
			for j := 1; ; j++ {
				c := get(form, fmt.Sprintf("%s.%s.%d.%s", p, src[0], j, src[1]))
				if c == "" {
					break
				}
				rules = append(rules, rng+" from "+c)
			}
		}
	}
	for _, rule := range rules {
		if has(r.Rules, rule) {
			return "", errf("InvalidPermission.Duplicate", "the specified rule %q already exists", rule)
		}
	}
	r.Rules = append(r.Rules, rules...)
	return "<return>true</return>", nil
}

// ec2DescribeSecurityGroups answers DescribeSecurityGroups.
func (f *Fake) ec2DescribeSecurityGroups(action string, form map[string][]string) (string, *apiError) {
	var b strings.Builder
	fs := filters(form)
	for _, r := range f.res {
		if r.Kind == "security-group" && r.Live() && r.matches(fs) {
			fmt.Fprintf(&b, "<item><groupId>%s</groupId><groupName>%s</groupName>%s</item>", r.ID, esc(r.Name), tagSet(r.Tags))
		}
	}
	return "<securityGroupInfo>" + b.String() + "</securityGroupInfo>", nil
}

// ec2DeleteSecurityGroup answers DeleteSecurityGroup.
func (f *Fake) ec2DeleteSecurityGroup(action string, form map[string][]string) (string, *apiError) {
	id := get(form, "GroupId")
	r := f.find("security-group", func(r *Resource) bool { return r.ID == id })
	if r == nil {
		return "", errf("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
	}
	var blocked *apiError
	if f.find("instance", func(i *Resource) bool { return i.SecurityGroup == id }) != nil {
		blocked = errf("DependencyViolation", "resource %s has a dependent object", id)
	}
	if e := f.remove(r, action, blocked); e != nil {
		return "", e
	}
	return "<return>true</return><groupId>" + id + "</groupId>", nil
}

// ec2DescribeInstances answers DescribeInstances.
func (f *Fake) ec2DescribeInstances(action string, form map[string][]string) (string, *apiError) {
	ids := list(form, "InstanceId")
	fs := filters(form)
	var b strings.Builder
	if e := f.lookUp(ids); e != nil {
		return "", e
	}
	for _, r := range f.res {
		if r.Kind != "instance" || !r.matches(fs) || (len(ids) > 0 && !has(ids, r.ID)) {
			continue
		}
		if len(ids) == 0 && len(fs) > 0 {
			// Listings by filter lag behind new instances.
			if r.listings++; r.listings <= r.listLag {
				continue
			}
		}
		f.advance(r)
		b.WriteString("<item><reservationId>r-fake</reservationId><ownerId>000000000000</ownerId><instancesSet><item>" + instXML(r) + "</item></instancesSet></item>")
	}
	return "<reservationSet>" + b.String() + "</reservationSet>", nil
}

// ec2TerminateInstances answers TerminateInstances.
func (f *Fake) ec2TerminateInstances(action string, form map[string][]string) (string, *apiError) {
	var b strings.Builder
	ids := list(form, "InstanceId")
	if e := f.lookUp(ids); e != nil {
		return "", e // one unknown ID and nothing is terminated, as EC2 does
	}
	for _, id := range ids {
		r := f.instance(id)
		prev := r.State
		if r.State != "terminated" {
			r.State, r.polls = "shutting-down", 0
		}
		f.touch(r, action)
		fmt.Fprintf(&b, "<item><instanceId>%s</instanceId><previousState><code>16</code><name>%s</name></previousState><currentState><code>32</code><name>%s</name></currentState></item>", id, prev, r.State)
	}
	return "<instancesSet>" + b.String() + "</instancesSet>", nil
}

func (f *Fake) inUseOnce(r *Resource) *apiError {
	if f.cur.InUseOnce[r.Kind] && !f.inUse[r.ID] {
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
		if !f.cur.NeverRunning && r.polls >= 2 {
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
	// A repeated request with the same client token (a retry after a lost
	// answer) gets the first one's instances, as in EC2.
	token := get(form, "ClientToken")
	if token != "" {
		var b strings.Builder
		for _, r := range f.res {
			if r.Kind == "instance" && r.ClientToken == token {
				b.WriteString("<item>" + instXML(r) + "</item>")
			}
		}
		if b.Len() > 0 {
			return reservationXML(b.String()), nil
		}
	}
	zone := get(form, "Placement.AvailabilityZone")
	pg := get(form, "Placement.GroupName")
	itype := get(form, "InstanceType")
	count, _ := strconv.Atoi(get(form, "MaxCount"))
	it, ok := f.Types[itype]
	switch {
	case !ok:
		return "", errf("InvalidParameterValue", "Invalid value '%s' for InstanceType.", itype)
	case get(form, "MinCount") != get(form, "MaxCount") || count < 2 || count > MaxInstances:
		return "", errf("InvalidParameterValue", "the fake wants MinCount=MaxCount, 2-%d (all or nothing), got %s/%s", MaxInstances, get(form, "MinCount"), get(form, "MaxCount"))
	case !has(f.Zones, zone):
		return "", errf("InvalidParameterValue", "Invalid availability zone: [%s]", zone)
	}
	if e := f.launchable(itype, it, zone, get(form, "ImageId")); e != nil {
		return "", e
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
	if has(f.cur.NoCapacityZones, zone) {
		return "", errf("InsufficientInstanceCapacity", "We currently do not have sufficient %s capacity in the Availability Zone you requested (%s).", itype, zone)
	}
	if e := f.vcpuLimit(it, count); e != nil {
		return "", e
	}
	ud, _ := base64.StdEncoding.DecodeString(get(form, "UserData"))
	tags := tagSpecs(form)
	var b strings.Builder
	for i := 0; i < count; i++ {
		r := &Resource{Kind: "instance", ID: f.newID("i"), State: "pending", Tags: tags["instance"], Zone: zone,
			SecurityGroup: sgs[0], PlacementGroup: pg, KeyName: key, ImageID: get(form, "ImageId"), InstanceType: itype,
			LaunchIndex: i, UserData: string(ud), ShutdownBehavior: get(form, "InstanceInitiatedShutdownBehavior"),
			ClientToken: token, hidden: f.cur.NotFoundLooks[i], listLag: f.cur.TagListLag}
		f.keep(r)
		b.WriteString("<item>" + instXML(r) + "</item>")
	}
	return reservationXML(b.String()), nil
}

func reservationXML(items string) string {
	return "<reservationId>r-fake</reservationId><ownerId>000000000000</ownerId><instancesSet>" + items + "</instancesSet>"
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
