package aws

import "encoding/json"

// The least-privilege IAM policy for everything linerate does in an
// account: up, the run, down, gc, the preflight and the price. What
// creates a resource must tag it as linerate's (aws:RequestTag), and
// what changes or removes one acts only on resources tagged so
// (ec2:ResourceTag); the rest reads.

// Statement is one statement of an IAM policy.
type Statement struct {
	Sid       string                    `json:"Sid"`
	Effect    string                    `json:"Effect"`
	Action    []string                  `json:"Action"`
	Resource  []string                  `json:"Resource"`
	Condition map[string]map[string]any `json:"Condition,omitempty"`
}

// PolicyDocument is an IAM policy.
type PolicyDocument struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// createActions create the resources linerate tags as it creates them.
var createActions = []string{"ec2:CreateKeyPair", "ec2:CreatePlacementGroup", "ec2:CreateSecurityGroup", "ec2:ImportKeyPair", "ec2:RunInstances"}

// Policy is the policy for region ("" or "*": every region).
func Policy(region string) PolicyDocument {
	if region == "" {
		region = "*"
	}
	arn := func(kind string) string { return "arn:aws:ec2:" + region + ":*:" + kind + "/*" }
	tagged := map[string]map[string]any{"Null": {"aws:RequestTag/" + TagCampaign: "false", "aws:RequestTag/" + TagOwner: "false"}}
	ours := map[string]map[string]any{"Null": {"ec2:ResourceTag/" + TagCampaign: "false"}}
	return PolicyDocument{Version: "2012-10-17", Statement: []Statement{
		{Sid: "Read", Effect: "Allow", Resource: []string{"*"}, Action: []string{
			"ec2:DescribeAvailabilityZones", "ec2:DescribeImages", "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes",
			"ec2:DescribeInstances", "ec2:DescribeKeyPairs", "ec2:DescribePlacementGroups", "ec2:DescribeSecurityGroups",
			"pricing:GetProducts", "servicequotas:GetServiceQuota", "sts:DecodeAuthorizationMessage",
		}},
		{Sid: "AmazonLinuxImage", Effect: "Allow", Action: []string{"ssm:GetParameter"},
			Resource: []string{"arn:aws:ssm:" + region + "::parameter/aws/service/ami-amazon-linux-latest/*"}},
		{Sid: "CreateTagged", Effect: "Allow", Action: createActions, Condition: tagged,
			Resource: []string{arn("instance"), arn("volume"), arn("key-pair"), arn("placement-group"), arn("security-group")}},
		{Sid: "LaunchWith", Effect: "Allow", Action: []string{"ec2:CreateSecurityGroup", "ec2:RunInstances"},
			Resource: []string{"arn:aws:ec2:" + region + "::image/*", arn("subnet"), arn("network-interface"), arn("vpc"),
				arn("security-group"), arn("key-pair"), arn("placement-group")}},
		{Sid: "TagOnCreate", Effect: "Allow", Action: []string{"ec2:CreateTags"}, Resource: []string{"*"},
			Condition: map[string]map[string]any{"StringEquals": {"ec2:CreateAction": createActions}}},
		{Sid: "RenewLease", Effect: "Allow", Action: []string{"ec2:CreateTags"}, Resource: []string{"*"},
			Condition: map[string]map[string]any{"Null": ours["Null"], "ForAllValues:StringEquals": {"aws:TagKeys": []string{TagLease}}}},
		{Sid: "ChangeOnlyOurs", Effect: "Allow", Resource: []string{"*"}, Condition: ours, Action: []string{
			"ec2:AuthorizeSecurityGroupIngress", "ec2:DeleteKeyPair", "ec2:DeletePlacementGroup", "ec2:DeleteSecurityGroup", "ec2:TerminateInstances",
		}},
	}}
}

// JSON is the policy as IAM takes it, indented.
func (d PolicyDocument) JSON() []byte {
	b, _ := json.MarshalIndent(d, "", "  ")
	return append(b, '\n')
}

// Actions are the policy's actions, sorted, each once.
func (d PolicyDocument) Actions() []string {
	seen := map[string]bool{}
	for _, s := range d.Statement {
		for _, a := range s.Action {
			seen[a] = true
		}
	}
	return sortedKeys(seen)
}
