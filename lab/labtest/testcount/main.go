// Command testcount reads `go test -json` on standard input and prints one
// line: how many top-level tests passed, failed and skipped (those skipped
// by name), then the output of every failed test. It exits 1 when a test
// or a package failed. .ci/arm64 uses it: the count is part of make
// test's report, and a count read from -v text is wrong once packages run
// side by side.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() { os.Exit(count(os.Stdin, os.Stdout, os.Stderr)) }

// count reads the events from in, writes the summary line to out and the
// failures to errw, and returns the exit status.
func count(in io.Reader, out, errw io.Writer) int {
	t := tally{output: map[string]*strings.Builder{}, running: map[string][]string{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(out, sc.Text()) // a build error line, not an event
			continue
		}
		t.add(e)
	}
	t.report(out, errw)
	if t.failed > 0 || len(t.brokenPkgs) > 0 || sc.Err() != nil {
		return 1
	}
	return 0
}

// tally is what the events said so far.
type tally struct {
	passed, failed                   int
	skipped, failedNames, brokenPkgs []string
	output                           map[string]*strings.Builder
	// Top-level tests started and not yet ended, by package: when a
	// package dies (its -timeout, a crash) the tests still running get no
	// event of their own, and their output holds the stack dump.
	running map[string][]string
}

func (t *tally) add(e event) {
	// A subtest's lines go with its top-level test's, which is what is
	// counted and printed.
	topName, _, _ := strings.Cut(e.Test, "/")
	key := e.Package + " " + topName
	top := e.Test != "" && topName == e.Test
	switch {
	case e.Action == "output":
		if t.output[key] == nil {
			t.output[key] = &strings.Builder{}
		}
		t.output[key].WriteString(e.Output)
	case e.Action == "fail" && e.Test == "":
		t.brokenPkgs = append(t.brokenPkgs, e.Package)
		for _, k := range t.running[e.Package] {
			t.fail(k+" (still running when the package ended)", t.output[k])
		}
		delete(t.running, e.Package)
	case !top:
	case e.Action == "run":
		t.running[e.Package] = append(t.running[e.Package], key)
	case e.Action == "pass" || e.Action == "skip" || e.Action == "fail":
		t.running[e.Package] = without(t.running[e.Package], key)
		switch e.Action {
		case "pass":
			t.passed++
		case "skip":
			t.skipped = append(t.skipped, e.Test)
		case "fail":
			t.fail(key, t.output[key])
		}
	}
}

func (t *tally) fail(name string, output *strings.Builder) {
	t.failed++
	t.failedNames = append(t.failedNames, name)
	t.output[name] = output
}

// report writes every failure's output to errw and the summary to out.
func (t *tally) report(out, errw io.Writer) {
	for _, k := range t.failedNames {
		fmt.Fprintf(errw, "--- FAIL: %s\n", k)
		if o := t.output[k]; o != nil {
			fmt.Fprint(errw, o)
		}
	}
	for _, p := range t.brokenPkgs {
		if o := t.output[p+" "]; o != nil {
			fmt.Fprintf(errw, "package %s:\n%s", p, lastLines(o.String(), 30))
		}
	}
	sort.Strings(t.skipped)
	fmt.Fprintf(out, "%d tests passed, %d failed", t.passed, t.failed)
	if len(t.skipped) > 0 {
		fmt.Fprintf(out, "; skipped by the tests themselves: %s", strings.Join(t.skipped, " "))
	}
	fmt.Fprintln(out)
}

// without returns keys less key.
func without(keys []string, key string) []string {
	for i, k := range keys {
		if k == key {
			return append(keys[:i], keys[i+1:]...)
		}
	}
	return keys
}

func lastLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}
