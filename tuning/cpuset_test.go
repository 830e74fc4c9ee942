package tuning

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab/labtest"
)

func TestParseCPUSet(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		str  string
	}{
		{"", nil, ""},
		{"0", []int{0}, "0"},
		{"0-3", []int{0, 1, 2, 3}, "0-3"},
		{"8-11,0-1, 3", []int{0, 1, 3, 8, 9, 10, 11}, "0-1,3,8-11"},
		{"2,2,1-2\n", []int{1, 2}, "1-2"},
		{"5-5", []int{5}, "5"},
	} {
		got, err := ParseCPUSet(tc.in)
		if err != nil {
			t.Errorf("ParseCPUSet(%q): %v", tc.in, err)
			continue
		}
		if !slices.Equal(got, tc.want) || got.String() != tc.str {
			t.Errorf("ParseCPUSet(%q) = %v (%q), want %v (%q)", tc.in, []int(got), got, tc.want, tc.str)
		}
	}
	for _, bad := range []string{"a", "3-1", "-1", "1-", "1,,2", "0-999999", "1.5"} {
		if _, err := ParseCPUSet(bad); err == nil {
			t.Errorf("ParseCPUSet(%q) accepted", bad)
		}
	}
}

func TestCPUSetOps(t *testing.T) {
	a, b := MustCPUSet("0-7"), MustCPUSet("4-11")
	if got := a.Intersect(b).String(); got != "4-7" {
		t.Errorf("intersect = %s", got)
	}
	if got := a.Minus(b).String(); got != "0-3" {
		t.Errorf("minus = %s", got)
	}
	if got := a.Union(b).String(); got != "0-11" {
		t.Errorf("union = %s", got)
	}
	j, err := json.Marshal(struct{ S CPUSet }{MustCPUSet("0-3,8")})
	if err != nil || string(j) != `{"S":"0-3,8"}` {
		t.Errorf("json = %s, %v", j, err)
	}
	var back struct{ S CPUSet }
	if err := json.Unmarshal(j, &back); err != nil || back.S.String() != "0-3,8" {
		t.Errorf("json back = %v, %v", back.S, err)
	}
}

// A range ending near the largest int would loop forever (the counter
// wraps) and a long one would fill memory: both end at once with an error.
func TestParseCPUSetIsBounded(t *testing.T) {
	for _, in := range []string{"0-2000000000", "0-9223372036854775807", "9223372036854775806-9223372036854775807", "8192", "0-4095,4096-8191,8192-12287"} {
		labtest.Within(t, 5*time.Second, func() {
			if _, err := ParseCPUSet(in); err == nil || !strings.Contains(err.Error(), "8191") {
				t.Errorf("%q: %v, want an error naming the bound", in, err)
			}
		})
	}
	if c, err := ParseCPUSet("0-8191"); err != nil || len(c) != 8192 {
		t.Errorf("the whole range: %d CPUs, %v", len(c), err)
	}
}
