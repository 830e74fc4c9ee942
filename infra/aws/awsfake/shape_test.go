package awsfake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	ptypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/linerate/linerate/infra/aws/awsfake"
)

// recorder keeps the body of the last answer.
type recorder struct {
	mu   sync.Mutex
	last []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.last = b
	r.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

func (r *recorder) body() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// leaf is one value an answer holds: its element or key, and its text.
type leaf struct{ name, value string }

// xmlLeaves are the texts of an XML answer's elements without children.
func xmlLeaves(t *testing.T, b []byte) []leaf {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var stack []string
	var out []leaf
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("the fake's XML: %v\n%s", err, b)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tk.Name.Local)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if s := strings.TrimSpace(string(tk)); s != "" && len(stack) > 0 {
				out = append(out, leaf{stack[len(stack)-1], s})
			}
		}
	}
}

// jsonLeaves are the scalar values of a JSON answer.
func jsonLeaves(t *testing.T, b []byte) []leaf {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("the fake's JSON: %v\n%s", err, b)
	}
	var out []leaf
	var walk func(name string, v any)
	walk = func(name string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(k, e)
			}
		case []any:
			for _, e := range x {
				walk(name, e)
			}
		case string:
			out = append(out, leaf{name, x})
		case float64:
			out = append(out, leaf{name, strconv.FormatFloat(x, 'f', -1, 64)})
		case bool:
			out = append(out, leaf{name, strconv.FormatBool(x)})
		}
	}
	walk("", v)
	return out
}

// values are the texts of every exported scalar in v, as the answer
// would spell them.
func values(v reflect.Value, out map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			values(v.Elem(), out)
		}
	case reflect.Struct:
		if t, ok := v.Interface().(time.Time); ok {
			out[t.UTC().Format(time.RFC3339)] = true
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				values(v.Field(i), out)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			out[string(v.Bytes())] = true
			return
		}
		for i := 0; i < v.Len(); i++ {
			values(v.Index(i), out)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			values(k, out)
			values(v.MapIndex(k), out)
		}
	case reflect.String:
		out[v.String()] = true
	case reflect.Bool:
		out[strconv.FormatBool(v.Bool())] = true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		out[strconv.FormatInt(v.Int(), 10)] = true
	case reflect.Float32, reflect.Float64:
		out[strconv.FormatFloat(v.Float(), 'f', -1, 64)] = true
	}
}

// metadata are the answer's elements the SDK keeps beside the output,
// not in it.
var metadata = map[string]bool{"requestId": true, "RequestId": true, "RequestID": true}

// Every answer the fake gives is read by aws-sdk-go-v2 whole: each value
// in the fake's XML or JSON is in what the SDK client returns (a value
// the SDK would drop, misnamed or misplaced, fails), and each error's
// code and message reach the SDK's API error.
func TestAnswersParseWhole(t *testing.T) {
	t.Parallel()
	f := awsfake.New()
	defer f.Close()
	rec := &recorder{}
	cfg := sdkaws.Config{
		Region: "us-east-1", BaseEndpoint: sdkaws.String(f.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDSHAPE", "fake-secret", ""),
		HTTPClient:  &http.Client{Transport: rec},
		Retryer:     func() sdkaws.Retryer { return sdkaws.NopRetryer{} },
	}
	e, s, pr := ec2.NewFromConfig(cfg), ssm.NewFromConfig(cfg), pricing.NewFromConfig(cfg)
	q, st := servicequotas.NewFromConfig(cfg), sts.NewFromConfig(cfg)
	ctx := context.Background()
	str, dry := sdkaws.String, sdkaws.Bool(true)
	tag := []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{{Key: str("linerate:owner"), Value: str("rshape")}}}}
	var sgID, keyID, iid string

	type call struct {
		name string
		do   func() (any, error)
		// wantErr is the error code the call gets; "" for none.
		wantErr string
	}
	calls := []call{
		{"DescribeInstanceTypes", func() (any, error) {
			return e.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{"c8gn.16xlarge", "c7i.large"}})
		}, ""},
		{"DescribeAvailabilityZones", func() (any, error) { return e.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{}) }, ""},
		{"DescribeInstanceTypeOfferings", func() (any, error) {
			return e.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: types.LocationTypeAvailabilityZone,
				Filters: []types.Filter{{Name: str("instance-type"), Values: []string{"c8gn.16xlarge"}}}})
		}, ""},
		{"DescribeImages", func() (any, error) {
			return e.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ami-0a1b2c3d4e5f60001"}})
		}, ""},
		{"RunInstances dry run", func() (any, error) {
			return e.RunInstances(ctx, &ec2.RunInstancesInput{DryRun: dry, ImageId: str("ami-0a1b2c3d4e5f60001"), InstanceType: "c8gn.16xlarge",
				MinCount: sdkaws.Int32(2), MaxCount: sdkaws.Int32(2), Placement: &types.Placement{AvailabilityZone: str("us-east-1a")}})
		}, "DryRunOperation"},
		{"CreateKeyPair", func() (any, error) {
			out, err := e.CreateKeyPair(ctx, &ec2.CreateKeyPairInput{KeyName: str("shape"), KeyType: types.KeyTypeEd25519})
			if err == nil {
				keyID = sdkaws.ToString(out.KeyPairId)
			}
			return out, err
		}, ""},
		{"ImportKeyPair", func() (any, error) {
			return e.ImportKeyPair(ctx, &ec2.ImportKeyPairInput{KeyName: str("shape-imported"), PublicKeyMaterial: []byte("ssh-ed25519 AAAA shape")})
		}, ""},
		{"DescribeKeyPairs", func() (any, error) { return e.DescribeKeyPairs(ctx, &ec2.DescribeKeyPairsInput{}) }, ""},
		{"CreatePlacementGroup", func() (any, error) {
			return e.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: str("shape"), Strategy: types.PlacementStrategyCluster})
		}, ""},
		{"DescribePlacementGroups", func() (any, error) {
			return e.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"shape"}})
		}, ""},
		{"CreateSecurityGroup", func() (any, error) {
			out, err := e.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: str("shape"), Description: str("shape")})
			if err == nil {
				sgID = sdkaws.ToString(out.GroupId)
			}
			return out, err
		}, ""},
		{"AuthorizeSecurityGroupIngress", func() (any, error) {
			return e.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: str(sgID),
				IpPermissions: []types.IpPermission{{IpProtocol: str("tcp"), FromPort: sdkaws.Int32(22), ToPort: sdkaws.Int32(22), IpRanges: []types.IpRange{{CidrIp: str("203.0.113.7/32")}}}}})
		}, ""},
		{"DescribeSecurityGroups", func() (any, error) { return e.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{}) }, ""},
		{"RunInstances", func() (any, error) {
			out, err := e.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: str("ami-0a1b2c3d4e5f60001"), InstanceType: "c8gn.16xlarge",
				MinCount: sdkaws.Int32(2), MaxCount: sdkaws.Int32(2), KeyName: str("shape"), SecurityGroupIds: []string{sgID},
				Placement: &types.Placement{AvailabilityZone: str("us-east-1a"), GroupName: str("shape")}, TagSpecifications: tag})
			if err == nil {
				iid = sdkaws.ToString(out.Instances[0].InstanceId)
			}
			return out, err
		}, ""},
		{"DescribeInstances pending", func() (any, error) {
			return e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{iid}})
		}, ""},
		{"DescribeInstances running", func() (any, error) {
			return e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{iid}})
		}, ""},
		{"CreateTags", func() (any, error) {
			return e.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{iid}, Tags: []types.Tag{{Key: str("linerate:lease"), Value: str("x")}}})
		}, ""},
		{"TerminateInstances", func() (any, error) {
			return e.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{iid}})
		}, ""},
		{"DeleteSecurityGroup in use", func() (any, error) {
			return e.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: str(sgID)})
		}, "DependencyViolation"},
		{"DeleteKeyPair", func() (any, error) { return e.DeleteKeyPair(ctx, &ec2.DeleteKeyPairInput{KeyPairId: str(keyID)}) }, ""},
		{"RunInstances over the quota", func() (any, error) {
			f.Quotas[awsfake.DefaultQuotaCode] = 64
			defer func() { f.Quotas[awsfake.DefaultQuotaCode] = 640 }()
			return e.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: str("ami-0a1b2c3d4e5f60001"), InstanceType: "c8gn.16xlarge",
				MinCount: sdkaws.Int32(2), MaxCount: sdkaws.Int32(2), KeyName: str("shape-imported"), SecurityGroupIds: []string{sgID},
				Placement: &types.Placement{AvailabilityZone: str("us-east-1a"), GroupName: str("shape")}})
		}, "VcpuLimitExceeded"},
		{"TerminateInstances denied", func() (any, error) {
			f.SetFaultsFor("AKIDSHAPE", awsfake.Faults{Deny: map[string]bool{"ec2:TerminateInstances": true}})
			defer f.SetFaultsFor("AKIDSHAPE", awsfake.Faults{})
			return e.TerminateInstances(ctx, &ec2.TerminateInstancesInput{DryRun: dry, InstanceIds: []string{iid}})
		}, "UnauthorizedOperation"},
		{"ssm GetParameter", func() (any, error) {
			return s.GetParameter(ctx, &ssm.GetParameterInput{Name: str("/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64")})
		}, ""},
		{"pricing GetProducts", func() (any, error) {
			m := func(k, v string) ptypes.Filter {
				return ptypes.Filter{Type: ptypes.FilterTypeTermMatch, Field: str(k), Value: str(v)}
			}
			return pr.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: str("AmazonEC2"), Filters: []ptypes.Filter{
				m("instanceType", "c8gn.16xlarge"), m("regionCode", "us-east-1"), m("operatingSystem", "Linux"), m("tenancy", "Shared")}})
		}, ""},
		{"servicequotas GetServiceQuota", func() (any, error) {
			return q.GetServiceQuota(ctx, &servicequotas.GetServiceQuotaInput{ServiceCode: str("ec2"), QuotaCode: str(awsfake.DefaultQuotaCode)})
		}, ""},
		{"servicequotas GetServiceQuota denied", func() (any, error) {
			f.SetFaultsFor("AKIDSHAPE", awsfake.Faults{Deny: map[string]bool{"servicequotas:GetServiceQuota": true}})
			defer f.SetFaultsFor("AKIDSHAPE", awsfake.Faults{})
			return q.GetServiceQuota(ctx, &servicequotas.GetServiceQuotaInput{ServiceCode: str("ec2"), QuotaCode: str(awsfake.DefaultQuotaCode)})
		}, "AccessDeniedException"},
		{"sts DecodeAuthorizationMessage", func() (any, error) {
			f.SetFaultsFor("AKIDSHAPE", awsfake.Faults{Deny: map[string]bool{"ec2:CreateTags": true}})
			_, err := e.CreateTags(ctx, &ec2.CreateTagsInput{DryRun: dry, Resources: []string{iid}, Tags: []types.Tag{{Key: str("k"), Value: str("v")}}})
			f.SetFaultsFor("AKIDSHAPE", awsfake.Faults{})
			var ae smithy.APIError
			if !errors.As(err, &ae) {
				return nil, fmt.Errorf("CreateTags denied: %v", err)
			}
			_, enc, _ := strings.Cut(ae.ErrorMessage(), "Encoded authorization failure message: ")
			return st.DecodeAuthorizationMessage(ctx, &sts.DecodeAuthorizationMessageInput{EncodedMessage: str(enc)})
		}, ""},
		{"sts DecodeAuthorizationMessage denied", func() (any, error) {
			f.SetFaultsFor("AKIDSHAPE", awsfake.Faults{Deny: map[string]bool{"sts:DecodeAuthorizationMessage": true}})
			defer f.SetFaultsFor("AKIDSHAPE", awsfake.Faults{})
			return st.DecodeAuthorizationMessage(ctx, &sts.DecodeAuthorizationMessageInput{EncodedMessage: str("fake1.e30")})
		}, "AccessDenied"},
	}
	for _, c := range calls {
		out, err := c.do()
		body := rec.body()
		var leaves []leaf
		if bytes.HasPrefix(bytes.TrimSpace(body), []byte("<")) {
			leaves = xmlLeaves(t, body)
		} else {
			leaves = jsonLeaves(t, body)
		}
		if c.wantErr != "" {
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != c.wantErr {
				t.Errorf("%s: error %v, want %s", c.name, err, c.wantErr)
				continue
			}
			got := map[string]bool{ae.ErrorCode(): true, ae.ErrorMessage(): true}
			for _, l := range leaves {
				if (l.name == "Code" || l.name == "Message" || l.name == "__type") && !got[l.value] {
					t.Errorf("%s: the SDK's error lost %s %q (it has code %q, message %q)", c.name, l.name, l.value, ae.ErrorCode(), ae.ErrorMessage())
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := map[string]bool{}
		values(reflect.ValueOf(out), got)
		if len(leaves) == 0 {
			t.Errorf("%s: the fake answered nothing to compare:\n%s", c.name, body)
		}
		for _, l := range leaves {
			if !metadata[l.name] && !got[l.value] {
				t.Errorf("%s: the SDK dropped <%s>%s</%s> of the fake's answer:\n%s", c.name, l.name, l.value, l.name, body)
			}
		}
	}
}
