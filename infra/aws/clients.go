// Package aws is the aws provider: an EC2 instance pair in one cluster
// placement group, brought up with aws-sdk-go-v2 and always taken down.
// Everything it creates carries the campaign's tag and its owner's (the
// run that made it) with a lease the running owner renews, so Down finds
// its own by tag, also after a crash, and GC removes only what an owner
// that stopped renewing left.
package aws

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// EC2 is the part of the EC2 API the provider uses (*ec2.Client has it).
type EC2 interface {
	DescribeInstanceTypes(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeAvailabilityZones(context.Context, *ec2.DescribeAvailabilityZonesInput, ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error)
	CreatePlacementGroup(context.Context, *ec2.CreatePlacementGroupInput, ...func(*ec2.Options)) (*ec2.CreatePlacementGroupOutput, error)
	DescribePlacementGroups(context.Context, *ec2.DescribePlacementGroupsInput, ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error)
	DeletePlacementGroup(context.Context, *ec2.DeletePlacementGroupInput, ...func(*ec2.Options)) (*ec2.DeletePlacementGroupOutput, error)
	CreateSecurityGroup(context.Context, *ec2.CreateSecurityGroupInput, ...func(*ec2.Options)) (*ec2.CreateSecurityGroupOutput, error)
	AuthorizeSecurityGroupIngress(context.Context, *ec2.AuthorizeSecurityGroupIngressInput, ...func(*ec2.Options)) (*ec2.AuthorizeSecurityGroupIngressOutput, error)
	DescribeSecurityGroups(context.Context, *ec2.DescribeSecurityGroupsInput, ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
	DeleteSecurityGroup(context.Context, *ec2.DeleteSecurityGroupInput, ...func(*ec2.Options)) (*ec2.DeleteSecurityGroupOutput, error)
	ImportKeyPair(context.Context, *ec2.ImportKeyPairInput, ...func(*ec2.Options)) (*ec2.ImportKeyPairOutput, error)
	CreateKeyPair(context.Context, *ec2.CreateKeyPairInput, ...func(*ec2.Options)) (*ec2.CreateKeyPairOutput, error)
	DescribeKeyPairs(context.Context, *ec2.DescribeKeyPairsInput, ...func(*ec2.Options)) (*ec2.DescribeKeyPairsOutput, error)
	DeleteKeyPair(context.Context, *ec2.DeleteKeyPairInput, ...func(*ec2.Options)) (*ec2.DeleteKeyPairOutput, error)
	RunInstances(context.Context, *ec2.RunInstancesInput, ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error)
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	TerminateInstances(context.Context, *ec2.TerminateInstancesInput, ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
	CreateTags(context.Context, *ec2.CreateTagsInput, ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
	// The preflight's.
	DescribeInstanceTypeOfferings(context.Context, *ec2.DescribeInstanceTypeOfferingsInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeImages(context.Context, *ec2.DescribeImagesInput, ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
}

// SSM is the part of the SSM API the provider uses: the public AMI
// parameters.
type SSM interface {
	GetParameter(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// Pricing is the part of the Price List API the cost prompt uses.
type Pricing interface {
	GetProducts(context.Context, *pricing.GetProductsInput, ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
}

// PricingRegion hosts the Price List API.
const PricingRegion = "us-east-1"

// Access says which AWS endpoint and credentials to use. Nothing is taken
// from the environment implicitly: the region and a credential source are
// always named, and the instance metadata service is never asked.
type Access struct {
	Region string
	// Profile is a shared-config profile (~/.aws/config) to take
	// credentials from. Either Profile or the static keys are required.
	Profile string
	// AccessKeyID and SecretAccessKey are static credentials;
	// SessionToken goes with temporary ones.
	AccessKeyID, SecretAccessKey, SessionToken string
	// Endpoint replaces the AWS endpoints (both EC2 and SSM): the local
	// fake in tests. Tests refuse to run without it.
	Endpoint string
	// MaxBackoff caps the SDK's retry backoff on throttling; default the
	// SDK's (20s).
	MaxBackoff time.Duration
}

// KeysFromEnv takes the static credentials from the environment:
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and, for temporary
// credentials, AWS_SESSION_TOKEN.
func (a *Access) KeysFromEnv() {
	a.AccessKeyID = os.Getenv("AWS_ACCESS_KEY_ID")
	a.SecretAccessKey = os.Getenv("AWS_SECRET_ACCESS_KEY")
	a.SessionToken = os.Getenv("AWS_SESSION_TOKEN")
}

// Validate names the bad field.
func (a Access) Validate() error {
	if a.Region == "" {
		return errors.New("aws region: empty; name it (e.g. --region us-east-1)")
	}
	if a.Profile == "" && (a.AccessKeyID == "" || a.SecretAccessKey == "") {
		return errors.New("aws credentials: name a profile (--profile) or give both static keys; linerate does not guess credentials")
	}
	if testing.Testing() && a.Endpoint == "" {
		return errors.New("aws endpoint: empty in a test binary; tests must use the local fake (awsfake), never AWS")
	}
	return nil
}

// Clients builds the EC2 and SSM clients for a.
func Clients(ctx context.Context, a Access) (EC2, SSM, error) {
	cfg, err := loadConfig(ctx, a, a.Region)
	if err != nil {
		return nil, nil, err
	}
	return ec2.NewFromConfig(cfg), ssm.NewFromConfig(cfg), nil
}

// PricingClient builds a Price List API client for a: the API lives in
// PricingRegion and answers for every region.
func PricingClient(ctx context.Context, a Access) (Pricing, error) {
	cfg, err := loadConfig(ctx, a, PricingRegion)
	if err != nil {
		return nil, err
	}
	return pricing.NewFromConfig(cfg), nil
}

// loadConfig is the SDK configuration for a, in region.
func loadConfig(ctx context.Context, a Access, region string) (sdkaws.Config, error) {
	if err := a.Validate(); err != nil {
		return sdkaws.Config{}, err
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(region),
		config.WithEC2IMDSClientEnableState(imds.ClientDisabled),
	}
	if a.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(a.Profile))
	} else {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(a.AccessKeyID, a.SecretAccessKey, a.SessionToken)))
	}
	if a.MaxBackoff > 0 {
		opts = append(opts, config.WithRetryer(func() sdkaws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxBackoff = a.MaxBackoff })
		}))
	}
	if a.Endpoint != "" {
		// Shared config files could name other endpoints; in tests they
		// are not read at all.
		opts = append(opts, config.WithSharedConfigFiles([]string{}), config.WithSharedCredentialsFiles([]string{}))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return sdkaws.Config{}, fmt.Errorf("aws config: %w", err)
	}
	if a.Endpoint != "" {
		cfg.BaseEndpoint = sdkaws.String(a.Endpoint)
	} else if os.Getenv("AWS_ENDPOINT_URL") != "" || os.Getenv("AWS_ENDPOINT_URL_EC2") != "" {
		return sdkaws.Config{}, errors.New("aws endpoint: AWS_ENDPOINT_URL is set; pass the endpoint explicitly instead")
	}
	return cfg, nil
}
