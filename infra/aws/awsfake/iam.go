package awsfake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// What AWS says about permissions, quotas and offerings: IAM denials
// with their encoded messages, EC2's dry runs, STS's decoding of those
// messages, Service Quotas and the instance type offerings.

// DefaultQuotaCode is the On-Demand vCPU quota of the standard families
// (A, C, D, H, I, M, R, T, Z), which the fake's types count against
// unless they name another.
const DefaultQuotaCode = "L-1216C47A"

// Mutating are the EC2 actions of the aws provider that create, change
// or remove something: a preflight may send them only as dry runs.
var Mutating = map[string]bool{
	"RunInstances": true, "CreatePlacementGroup": true, "CreateSecurityGroup": true, "AuthorizeSecurityGroupIngress": true,
	"CreateKeyPair": true, "ImportKeyPair": true, "CreateTags": true, "TerminateInstances": true,
	"DeletePlacementGroup": true, "DeleteSecurityGroup": true, "DeleteKeyPair": true,
}

// fakeAccount is the account ID in the fake's ARNs.
const fakeAccount = "000000000000"

// denied is the answer to a call of an IAM action the faults deny (f.mu
// held): EC2's UnauthorizedOperation with an encoded message that only
// STS decodes, as AWS does.
func (f *Fake) denied(action string) *apiError {
	if !f.cur.Deny[action] {
		return nil
	}
	return &apiError{status: 403, code: "UnauthorizedOperation",
		message: "You are not authorized to perform this operation. Encoded authorization failure message: " + encodeDenial(action)}
}

// encodeDenial is the fake's encoded authorization failure message: the
// decoded document AWS's STS would give, encoded so that only the fake's
// DecodeAuthorizationMessage reads it.
func encodeDenial(action string) string {
	doc, _ := json.Marshal(map[string]any{
		"allowed": false, "explicitDeny": false,
		"matchedStatements": map[string]any{"items": []any{}},
		"failures":          map[string]any{"items": []any{}},
		"context": map[string]any{
			"principal": map[string]string{"id": "AIDAFAKE", "arn": "arn:aws:iam::" + fakeAccount + ":user/linerate"},
			"action":    action,
			"resource":  "arn:aws:ec2:us-east-1:" + fakeAccount + ":*",
		},
	})
	return "fake1." + base64.RawURLEncoding.EncodeToString(doc)
}

func decodeDenial(msg string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(msg, "fake1."))
	if err != nil || !strings.HasPrefix(msg, "fake1.") {
		return "", false
	}
	return string(b), true
}

// dryRun answers an EC2 call with DryRun set, permitted: what EC2 checks
// of the request before it would act (for RunInstances the type, its
// zone and the image's architecture), then DryRunOperation (f.mu held).
func (f *Fake) dryRun(action string, form map[string][]string) *apiError {
	if action == "RunInstances" {
		itype, zone := get(form, "InstanceType"), get(form, "Placement.AvailabilityZone")
		it, ok := f.Types[itype]
		switch {
		case !ok:
			return errf("InvalidParameterValue", "Invalid value '%s' for InstanceType.", itype)
		case zone != "" && !has(f.Zones, zone):
			return errf("InvalidParameterValue", "Invalid availability zone: [%s]", zone)
		}
		if e := f.launchable(itype, it, zone, get(form, "ImageId")); e != nil {
			return e
		}
		if f.cur.DryRunChecksExistence {
			if e := f.namedExist(form); e != nil {
				return e
			}
		}
	}
	return &apiError{status: 412, code: "DryRunOperation", message: "Request would have succeeded, but DryRun flag is set."}
}

// namedExist checks that the placement group, key pair and security
// groups a RunInstances names exist.
func (f *Fake) namedExist(form map[string][]string) *apiError {
	if pg := get(form, "Placement.GroupName"); pg != "" && f.find("placement-group", func(r *Resource) bool { return r.Name == pg }) == nil {
		return errf("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", pg)
	}
	if key := get(form, "KeyName"); key != "" && f.find("key-pair", func(r *Resource) bool { return r.Name == key }) == nil {
		return errf("InvalidKeyPair.NotFound", "The key pair '%s' does not exist", key)
	}
	for _, sg := range list(form, "SecurityGroupId") {
		if f.find("security-group", func(r *Resource) bool { return r.ID == sg }) == nil {
			return errf("InvalidGroup.NotFound", "The security group '%s' does not exist", sg)
		}
	}
	return nil
}

// launchable is what RunInstances checks of the type in zone and the
// image, dry run or not.
func (f *Fake) launchable(itype string, it InstanceType, zone, image string) *apiError {
	if zone != "" && has(f.cur.NotOffered[itype], zone) {
		return errf("Unsupported", "Your requested instance type (%s) is not supported in your requested Availability Zone (%s).", itype, zone)
	}
	arch, ok := f.imageArch(image)
	if !ok {
		return errf("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", image)
	}
	if arch != it.Arch {
		return errf("InvalidParameterValue", "The architecture '%s' of the specified instance type does not match the architecture '%s' of the specified AMI.", it.Arch, arch)
	}
	return nil
}

// imageArch is the architecture of an image the AMI parameters name.
func (f *Fake) imageArch(id string) (string, bool) {
	if a, ok := f.cur.ImageArch[id]; ok {
		return a, true
	}
	for param, ami := range f.AMIs {
		if ami == id {
			return param[strings.LastIndex(param, "-")+1:], true
		}
	}
	return "", false
}

// offered reports whether itype is offered in zone.
func (f *Fake) offered(itype, zone string) bool {
	_, known := f.Types[itype]
	return known && has(f.Zones, zone) && !has(f.cur.NotOffered[itype], zone)
}

// describeOfferings answers DescribeInstanceTypeOfferings by zone, with
// the filters instance-type and location.
func (f *Fake) describeOfferings(form map[string][]string) (string, *apiError) {
	if lt := get(form, "LocationType"); lt != "availability-zone" {
		return "", errf("InvalidParameterValue", "the fake offers by availability-zone only, got LocationType %q", lt)
	}
	var types, zones []string
	for _, fl := range filters(form) {
		switch fl.name {
		case "instance-type":
			types = fl.values
		case "location":
			zones = fl.values
		default:
			return "", errf("InvalidParameterValue", "the fake does not know filter %s here", fl.name)
		}
	}
	var b strings.Builder
	for _, t := range sortedTypes(f.Types) {
		for _, z := range f.Zones {
			if (types == nil || has(types, t)) && (zones == nil || has(zones, z)) && f.offered(t, z) {
				fmt.Fprintf(&b, "<item><instanceType>%s</instanceType><locationType>availability-zone</locationType><location>%s</location></item>", esc(t), esc(z))
			}
		}
	}
	return "<instanceTypeOfferingSet>" + b.String() + "</instanceTypeOfferingSet>", nil
}

func sortedTypes(m map[string]InstanceType) []string {
	var out []string
	for t := range m {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// describeImages answers DescribeImages by image ID.
func (f *Fake) describeImages(form map[string][]string) (string, *apiError) {
	var b strings.Builder
	for _, id := range list(form, "ImageId") {
		arch, ok := f.imageArch(id)
		if !ok {
			return "", errf("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", id)
		}
		fmt.Fprintf(&b, "<item><imageId>%s</imageId><imageState>available</imageState><architecture>%s</architecture><imageType>machine</imageType><name>al2023-ami-fake-%s</name><enaSupport>true</enaSupport></item>", esc(id), esc(arch), esc(arch))
	}
	return "<imagesSet>" + b.String() + "</imagesSet>", nil
}

// vcpusRunning are the vCPUs of the pending and running instances whose
// types count against quota code.
func (f *Fake) vcpusRunning(code string) int {
	n := 0
	for _, r := range f.res {
		if r.Kind != "instance" || (r.State != "pending" && r.State != "running") {
			continue
		}
		if it, ok := f.Types[r.InstanceType]; ok && quotaCode(it) == code {
			n += it.VCPUs
		}
	}
	return n
}

func quotaCode(it InstanceType) string {
	if it.QuotaCode == "" {
		return DefaultQuotaCode
	}
	return it.QuotaCode
}

// vcpuLimit is RunInstances' answer when count more instances of it would
// pass the account's quota.
func (f *Fake) vcpuLimit(it InstanceType, count int) *apiError {
	code := quotaCode(it)
	q, ok := f.Quotas[code]
	if !ok || float64(f.vcpusRunning(code)+count*it.VCPUs) <= q {
		return nil
	}
	return errf("VcpuLimitExceeded", "You have requested more vCPU capacity than your current vCPU limit of %g allows for the instance bucket that the specified instance type belongs to. Please visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.", q)
}

// serveQuotas answers Service Quotas' GetServiceQuota (JSON protocol).
func (f *Fake) serveQuotas(w http.ResponseWriter, r *http.Request, action string) {
	var in struct{ ServiceCode, QuotaCode string }
	call := jsonCall(r, "servicequotas:"+action, &in)
	f.mu.Lock()
	f.begin(call)
	deny := f.cur.Deny[call.Action]
	q, known := f.Quotas[in.QuotaCode]
	f.mu.Unlock()
	f.after(call)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	fail := func(code, msg string) {
		w.WriteHeader(400)
		json.NewEncoder(w).Encode(map[string]string{"__type": code, "Message": msg})
	}
	switch {
	case deny:
		fail("AccessDeniedException", "User: arn:aws:iam::"+fakeAccount+":user/linerate is not authorized to perform: "+call.Action)
	case action != "GetServiceQuota":
		fail("InvalidAction", "the fake has only GetServiceQuota")
	case in.ServiceCode != "ec2" || !known:
		fail("NoSuchResourceException", "The request failed because the specified service quota does not exist.")
	default:
		json.NewEncoder(w).Encode(map[string]any{"Quota": map[string]any{
			"ServiceCode": "ec2", "ServiceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
			"QuotaArn":  "arn:aws:servicequotas:us-east-1:" + fakeAccount + ":ec2/" + in.QuotaCode,
			"QuotaCode": in.QuotaCode, "QuotaName": "Running On-Demand instances (" + in.QuotaCode + ")",
			"Value": q, "Unit": "None", "Adjustable": true, "GlobalQuota": false,
		}})
	}
}

// serveSTS answers STS's DecodeAuthorizationMessage (query protocol,
// answers wrapped in a Result element, unlike EC2's).
func (f *Fake) serveSTS(w http.ResponseWriter, r *http.Request, call Call) {
	action := r.PostForm.Get("Action")
	call.Action = "sts:" + action
	f.mu.Lock()
	f.begin(call)
	deny := f.cur.Deny[call.Action]
	n := len(f.calls)
	f.mu.Unlock()
	f.after(call)
	w.Header().Set("Content-Type", "text/xml")
	fail := func(status int, code, msg string) {
		w.WriteHeader(status)
		fmt.Fprintf(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>req-%d</RequestId></ErrorResponse>`, esc(code), esc(msg), n)
	}
	decoded, ok := decodeDenial(r.PostForm.Get("EncodedMessage"))
	switch {
	case deny:
		fail(403, "AccessDenied", "User: arn:aws:iam::"+fakeAccount+":user/linerate is not authorized to perform: sts:DecodeAuthorizationMessage")
	case action != "DecodeAuthorizationMessage":
		fail(400, "InvalidAction", "the fake has only DecodeAuthorizationMessage")
	case !ok:
		fail(400, "InvalidAuthorizationMessageException", "The encoded message is not valid.")
	default:
		fmt.Fprintf(w, `<DecodeAuthorizationMessageResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><DecodeAuthorizationMessageResult><DecodedMessage>%s</DecodedMessage></DecodeAuthorizationMessageResult><ResponseMetadata><RequestId>req-%d</RequestId></ResponseMetadata></DecodeAuthorizationMessageResponse>`, esc(decoded), n)
	}
}
