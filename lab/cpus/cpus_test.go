package cpus

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every rule the three parsers this one replaced had (lab's, infra's and
// tuning's), one row each; where they disagreed the row says who changed.
func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		rule, in string
		want     []int  // nil with err: refused
		str      string // String() of the result
		err      string // part of the error
	}{
		{rule: "single CPU", in: "0", want: []int{0}, str: "0"},
		{rule: "range", in: "0-3", want: []int{0, 1, 2, 3}, str: "0-3"},
		{rule: "range of one", in: "5-5", want: []int{5}, str: "5"},
		{rule: "mixed", in: "0,2,4-7", want: []int{0, 2, 4, 5, 6, 7}, str: "0,2,4-7"},
		{rule: "order kept (lab); infra and tuning sorted", in: "8-11,0-1,3", want: []int{8, 9, 10, 11, 0, 1, 3}, str: "8-11,0-1,3"},
		{rule: "blanks around the list (all three)", in: " 0-3\n", want: []int{0, 1, 2, 3}, str: "0-3"},
		{rule: "blanks around a part (all three)", in: "8-11, 0-1 ,3", want: []int{8, 9, 10, 11, 0, 1, 3}, str: "8-11,0-1,3"},
		{rule: "blanks inside a range (lab, infra); tuning refused", in: "0 - 3", want: []int{0, 1, 2, 3}, str: "0-3"},
		{rule: "empty list (lab, tuning); infra refused", in: "", want: nil, str: ""},
		{rule: "blank list", in: " \n", want: nil, str: ""},
		{rule: "highest CPU", in: "8191", want: []int{8191}, str: "8191"},
		{rule: "empty part", in: "1,,2", err: `"" is not a CPU number`},
		{rule: "trailing comma", in: "0,", err: "is not a CPU number"},
		{rule: "leading comma", in: ",0", err: "is not a CPU number"},
		{rule: "open range", in: "1-", err: "bad range"},
		{rule: "descending range", in: "3-1", err: "bad range"},
		{rule: "negative", in: "-1", err: "is not a CPU number"},
		{rule: "negative end", in: "3--1", err: "bad range"},
		{rule: "not a number", in: "a", err: "is not a CPU number"},
		{rule: "not a number in a range", in: "3-x", err: "bad range"},
		{rule: "fraction", in: "1.5", err: "is not a CPU number"},
		{rule: "stride (none of the three took one)", in: "0-7:2", err: "bad range"},
		{rule: "kernel stride with groups", in: "0-7:2/4", err: "bad range"},
		{rule: "hex mask form", in: "0x3", err: "is not a CPU number"},
		{rule: "duplicate (lab, infra); tuning merged it", in: "1,1", err: "names CPU 1 twice"},
		{rule: "overlapping ranges (lab, infra); tuning merged them", in: "0-3,2", err: "names CPU 2 twice"},
		{rule: "above the bound", in: "8192", err: "above 8191"},
		{rule: "range past the bound", in: "0,8191-9000", err: "above 8191"},
	} {
		got, err := Parse(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: Parse(%q) = %v, %v; want an error with %q", tc.rule, tc.in, []int(got), err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: Parse(%q): %v", tc.rule, tc.in, err)
		case tc.err == "" && (!slices.Equal(got, tc.want) || got.String() != tc.str):
			t.Errorf("%s: Parse(%q) = %v (%q), want %v (%q)", tc.rule, tc.in, []int(got), got, tc.want, tc.str)
		}
	}
}

// A range ending near the largest int would loop forever (the counter
// wraps) and a long one would fill memory: both end at once with an error
// naming the bound.
func TestParseCPUListIsBounded(t *testing.T) {
	for _, in := range []string{
		"0-2000000000", "0-9223372036854775807", "9223372036854775806-9223372036854775807",
		"8192", "0-8192", "0,8191-9000", "0-4095,4096-8191,8192-12287",
	} {
		done := make(chan error, 1)
		go func() { _, err := Parse(in); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "8191") {
				t.Errorf("%q: %v, want an error naming the bound", in, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%q: still parsing after 5 s", in)
		}
	}
	if l, err := Parse("0-8191"); err != nil || len(l) != Max {
		t.Errorf("the whole range: %d CPUs, %v", len(l), err)
	}
}

func TestCPUListValidate(t *testing.T) {
	for _, tc := range []struct {
		l  List
		ok bool
	}{
		{nil, true}, {List{3, 0, 8191}, true},
		{List{-1}, false}, {List{Max}, false}, {List{3, 3}, false},
	} {
		if err := tc.l.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%v) = %v, want ok=%v", []int(tc.l), err, tc.ok)
		}
	}
}

func TestCPUListSetOps(t *testing.T) {
	a, b := Must("0-7"), Must("4-11")
	for _, tc := range []struct {
		name string
		got  List
		want string
	}{
		{"intersect", a.Intersect(b), "4-7"},
		{"minus", a.Minus(b), "0-3"},
		{"union", a.Union(b), "0-11"},
		{"intersect ignores order", Must("9,3,1").Intersect(Must("1-3")), "1,3"},
		{"minus ignores order", Must("9,3,1").Minus(Must("3")), "1,9"},
		{"union ignores order", Must("9,3").Union(Must("1,3")), "1,3,9"},
		{"sorted", Must("8-11,0-1").Sorted(), "0-1,8-11"},
		{"disjoint", a.Intersect(Must("20-21")), ""},
	} {
		if tc.got.String() != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	if !a.Contains(7) || a.Contains(8) {
		t.Error("Contains")
	}
	if !Must("3,1-2").Equal(Must("1-3")) || a.Equal(b) {
		t.Error("Equal compares CPUs, not order")
	}
}

// JSON keeps the bench record's array of numbers (a cell's hash covers it)
// and reads the list format tuning snapshots were written in.
func TestCPUListJSON(t *testing.T) {
	j, err := json.Marshal(struct{ L List }{Must("4,0-1")})
	if err != nil || string(j) != `{"L":[4,0,1]}` {
		t.Errorf("json = %s, %v", j, err)
	}
	for in, want := range map[string]string{`[4,0,1]`: "4,0-1", `"0-3,8"`: "0-3,8", `null`: "", `""`: ""} {
		var l List
		if err := json.Unmarshal([]byte(in), &l); err != nil || l.String() != want {
			t.Errorf("unmarshal %s = %q, %v; want %q", in, l, err, want)
		}
	}
	for _, bad := range []string{`[1,1]`, `[9000]`, `"0-99999"`, `{}`, `"x"`} {
		var l List
		if err := json.Unmarshal([]byte(bad), &l); err == nil {
			t.Errorf("unmarshal %s accepted: %v", bad, []int(l))
		}
	}
}

// List is a pflag.Value: --cpu-list parses through Set.
func TestCPUListFlag(t *testing.T) {
	var l List
	if err := l.Set("4-5,1"); err != nil || l.String() != "4-5,1" || l.Type() != "cpus" {
		t.Errorf("Set = %v %q", err, l)
	}
	if err := l.Set("9999"); err == nil || l.String() != "4-5,1" {
		t.Errorf("a bad value: %v, and the list became %q", err, l)
	}
}
