package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README quotes no measured speed: a rate (`12.3 Gbps`) or a ratio
// (`1.38×`) it states is a goal `make bench` holds a row to (`≥ 1.0×`),
// never a figure from a run, which goes stale or fails to reproduce on
// the reader's machine. What linerate measured is a dated row of
// bench/results.json. A ratio after a bound (≥, ≤, over, under) is a goal
// or a rule, not a claim. The example output of a bench run is exempt: it
// shows the format, inside a code block.
func TestReadmeQuotesNoMeasuredSpeed(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	gbps := regexp.MustCompile(`\b\d+(\.\d+)? Gbps\b`)
	ratio := regexp.MustCompile(`\d+(\.\d+)?×`)
	code := false
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			code = !code
		}
		if code {
			continue
		}
		if m := gbps.FindString(line); m != "" {
			t.Errorf("README.md:%d quotes a rate, %q: state it as a make bench row or drop it\n%s", i+1, m, line)
		}
		for _, m := range ratio.FindAllStringIndex(line, -1) {
			if !bound(line[:m[0]]) {
				t.Errorf("README.md:%d quotes a ratio, %q, that is no goal (≥ or ≤): state it as a make bench row or drop it\n%s", i+1, line[m[0]:m[1]], line)
			}
		}
	}
}

// bound says whether text ends with a bound, so the ratio after it is a
// goal or a threshold.
func bound(text string) bool {
	text = strings.TrimSpace(text)
	for _, b := range []string{"≥", "≤", "over", "under", "above", "below"} {
		if strings.HasSuffix(text, b) {
			return true
		}
	}
	return false
}

// The README is a front door: at most 150 lines, and its test command is
// the one CI runs (.ci/run calls exactly it).
func TestReadmeIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n > 150 {
		t.Errorf("README.md has %d lines; keep it at most 150 (the reference goes to docs/)", n)
	}
	test := regexp.MustCompile("(?m)^(make test)\\s+#").FindStringSubmatch(readme)
	if test == nil {
		t.Fatal("README.md states no `make test   # ...` command")
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(ci)), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != test[1] {
		t.Errorf(".ci/run ends with %q, the README's test command is %q", last, test[1])
	}
}
