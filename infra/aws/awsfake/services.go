package awsfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// serveSSM answers GetParameter for the AMI parameters.
func (f *Fake) serveSSM(w http.ResponseWriter, r *http.Request, target string) {
	var in struct{ Name string }
	b, _ := io.ReadAll(r.Body)
	json.Unmarshal(b, &in)
	action := strings.TrimPrefix(target, "AmazonSSM.")
	call := signer(r)
	call.Action = "ssm:" + action
	f.mu.Lock()
	f.begin(call)
	apiErr := f.throttled(call.Action)
	ami, ok := f.AMIs[in.Name]
	deny := f.cur.Deny[call.Action]
	hang := f.cur.HangAfter[call.Action]
	f.mu.Unlock()
	f.after(call)
	if hang {
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
	case deny:
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"__type":"AccessDeniedException","message":"User: arn:aws:iam::%s:user/linerate is not authorized to perform: %s"}`, fakeAccount, call.Action)
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

// jsonCall reads a JSON-protocol request into in: the call it is.
func jsonCall(r *http.Request, action string, in any) Call {
	b, _ := io.ReadAll(r.Body)
	json.Unmarshal(b, in)
	call := signer(r)
	call.Action = action
	return call
}

// servePricing answers the Price List API's GetProducts for EC2 with one
// product per known type in us-east-1, shaped as AWS returns it: each
// price list entry is a JSON document in a string.
func (f *Fake) servePricing(w http.ResponseWriter, r *http.Request, action string) {
	var in struct {
		ServiceCode string
		Filters     []struct{ Type, Field, Value string }
	}
	call := jsonCall(r, "pricing:"+action, &in)
	f.mu.Lock()
	f.begin(call)
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
