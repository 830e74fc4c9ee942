package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	ptypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
)

// HourlyPrice asks the Price List API for the on-demand price in USD of
// one Linux instance of instanceType in region (shared tenancy, no
// pre-installed software): the figure the cost prompt multiplies by two.
func HourlyPrice(ctx context.Context, p Pricing, instanceType, region string) (float64, error) {
	match := func(field, value string) ptypes.Filter {
		return ptypes.Filter{Type: ptypes.FilterTypeTermMatch, Field: sdkaws.String(field), Value: sdkaws.String(value)}
	}
	out, err := p.GetProducts(ctx, &pricing.GetProductsInput{
		ServiceCode: sdkaws.String("AmazonEC2"),
		Filters: []ptypes.Filter{
			match("instanceType", instanceType), match("regionCode", region),
			match("operatingSystem", "Linux"), match("tenancy", "Shared"),
			match("preInstalledSw", "NA"), match("capacitystatus", "Used"),
		},
		FormatVersion: sdkaws.String("aws_v1"),
		MaxResults:    sdkaws.Int32(10),
	})
	if err != nil {
		return 0, fmt.Errorf("price of %s in %s: %w", instanceType, region, err)
	}
	prices := map[float64]bool{}
	for _, doc := range out.PriceList {
		var item struct {
			Terms struct {
				OnDemand map[string]struct {
					PriceDimensions map[string]struct {
						Unit         string            `json:"unit"`
						PricePerUnit map[string]string `json:"pricePerUnit"`
					} `json:"priceDimensions"`
				} `json:"OnDemand"`
			} `json:"terms"`
		}
		if err := json.Unmarshal([]byte(doc), &item); err != nil {
			return 0, fmt.Errorf("price of %s in %s: a price list entry: %w", instanceType, region, err)
		}
		for _, term := range item.Terms.OnDemand {
			for _, dim := range term.PriceDimensions {
				if usd, err := strconv.ParseFloat(dim.PricePerUnit["USD"], 64); err == nil && usd > 0 && dim.Unit == "Hrs" {
					prices[usd] = true
				}
			}
		}
	}
	if len(prices) != 1 {
		return 0, fmt.Errorf("price of %s in %s: the Price List API gave %d on-demand Linux prices, want one (give it with hourly-usd)", instanceType, region, len(prices))
	}
	for usd := range prices {
		return usd, nil
	}
	return 0, nil
}

// LookUpPrice fills cfg.HourlyUSD from the Price List API when it is not
// given; an error leaves it unknown (the prompt says so).
func LookUpPrice(ctx context.Context, cfg *Config) error {
	if cfg.HourlyUSD > 0 {
		return nil
	}
	p, err := PricingClient(ctx, cfg.Access)
	if err != nil {
		return err
	}
	usd, err := HourlyPrice(ctx, p, cfg.InstanceType, cfg.Region)
	if err != nil {
		return err
	}
	cfg.HourlyUSD = usd
	return nil
}
