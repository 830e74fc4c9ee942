package lab

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"1048576", 1048576, false},
		{"8MiB", 8 << 20, false},
		{"8MB", 8_000_000, false},
		{"8mib", 8 << 20, false},
		{"64MiB", 64 << 20, false},
		{"1.5KiB", 1536, false},
		{"1KB", 1000, false},
		{"1GiB", 1 << 30, false},
		{"100B", 100, false},
		{"1.3B", 0, true},
		{"", 0, true},
		{"8XB", 0, true},
		{"-1", 0, true},
		{"1e6", 0, true},
		{"8M", 0, true}, // ambiguous between the families: refused
	} {
		got, err := ParseSize(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseSize(%q) = %d, want an error", tc.in, got)
			} else if !strings.Contains(err.Error(), "MiB") && !strings.Contains(err.Error(), "whole") {
				t.Errorf("ParseSize(%q) error does not list the forms: %v", tc.in, err)
			}
			continue
		}
		if err != nil || int64(got) != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestSizeStringRoundTrips(t *testing.T) {
	for _, n := range []int64{1, 1000, 1024, 1 << 20, 8_000_000, 12 << 20, 1 << 30, 3 * 1e9, 1234567} {
		s := Size(n).String()
		back, err := ParseSize(s)
		if err != nil || int64(back) != n {
			t.Errorf("%d -> %q -> %d, %v", n, s, back, err)
		}
	}
}

func TestParseRatioAndCPUList(t *testing.T) {
	if r, err := ParseRatio("90:10"); err != nil || r != (Ratio{Gets: 90, Sets: 10}) {
		t.Errorf("90:10 -> %v %v", r, err)
	}
	for _, bad := range []string{"100", "0:0", "a:b", "-1:5", ""} {
		if _, err := ParseRatio(bad); err == nil {
			t.Errorf("ParseRatio(%q) accepted", bad)
		}
	}
	l, err := ParseCPUList("0,2,4-7")
	if err != nil || !reflect.DeepEqual(l, CPUList{0, 2, 4, 5, 6, 7}) || l.String() != "0,2,4-7" {
		t.Errorf("cpu list: %v %q %v", l, l.String(), err)
	}
	for _, bad := range []string{"4-2", "a", "1,1", "3-x", "-1"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) accepted", bad)
		}
	}
}

func TestKeyNames(t *testing.T) {
	if k := KeyName(42, 16); k != "key:000000000042" || len(k) != 16 {
		t.Fatalf("KeyName = %q", k)
	}
	if string(AppendKey(nil, 42, 16)) != KeyName(42, 16) {
		t.Fatal("AppendKey and KeyName disagree")
	}
	if id, ok := ParseKeyID([]byte("key:000000000042")); !ok || id != 42 {
		t.Fatalf("ParseKeyID = %d %v", id, ok)
	}
	for _, bad := range []string{"foo:1", "key:12a", "key:99999999999"} {
		if _, ok := ParseKeyID([]byte(bad)); ok {
			t.Errorf("ParseKeyID(%q) accepted", bad)
		}
	}
}
