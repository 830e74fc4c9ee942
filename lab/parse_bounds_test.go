package lab_test

import (
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
)

// Hostile CPU lists end at once with an error: one would allocate gigabytes,
// the others would loop forever (the counter wraps at the largest int).
func TestParseCPUListIsBounded(t *testing.T) {
	for _, in := range []string{
		"0-2000000000", "0-9223372036854775807", "9223372036854775806-9223372036854775807",
		"8192", "0-8192", "0,8191-9000",
	} {
		labtest.Within(t, 5*time.Second, func() {
			if l, err := lab.ParseCPUList(in); err == nil {
				t.Errorf("ParseCPUList(%q) accepted %d CPUs", in, len(l))
			} else if !strings.Contains(err.Error(), "8191") {
				t.Errorf("ParseCPUList(%q): %v; want the bound named", in, err)
			}
		})
	}
	l, err := lab.ParseCPUList("0-8191")
	if err != nil || len(l) != lab.MaxCPUs {
		t.Errorf("the whole range: %d CPUs, %v", len(l), err)
	}
}

func TestParseRatioIsBounded(t *testing.T) {
	for _, in := range []string{"9223372036854775807:1", "1:9223372036854775807", "1000001:0", "-1:1"} {
		if r, err := lab.ParseRatio(in); err == nil {
			t.Errorf("ParseRatio(%q) = %v, want an error", in, r)
		}
	}
	if r, err := lab.ParseRatio("1000000:1000000"); err != nil || r.Gets+r.Sets != 2*lab.MaxRatioWeight {
		t.Errorf("the largest ratio: %v %v", r, err)
	}
}
