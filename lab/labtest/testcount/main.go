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
	var passed, failed int
	var skipped, failedNames, brokenPkgs []string
	output := map[string]*strings.Builder{}
	// Top-level tests started and not yet ended, by package: when a
	// package dies (its -timeout, a crash) the tests still running get no
	// event of their own, and their output holds the stack dump.
	running := map[string][]string{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(out, sc.Text()) // a build error line, not an event
			continue
		}
		// A subtest's lines go with its top-level test's, which is what
		// is counted and printed.
		topName, _, _ := strings.Cut(e.Test, "/")
		key := e.Package + " " + topName
		top := e.Test != "" && topName == e.Test
		switch e.Action {
		case "run":
			if top {
				running[e.Package] = append(running[e.Package], key)
			}
		case "output":
			if output[key] == nil {
				output[key] = &strings.Builder{}
			}
			output[key].WriteString(e.Output)
		case "pass":
			if top {
				passed++
				running[e.Package] = without(running[e.Package], key)
			}
		case "skip":
			if top {
				skipped = append(skipped, e.Test)
				running[e.Package] = without(running[e.Package], key)
			}
		case "fail":
			switch {
			case top:
				failed++
				failedNames = append(failedNames, key)
				running[e.Package] = without(running[e.Package], key)
			case e.Test == "":
				brokenPkgs = append(brokenPkgs, e.Package)
				for _, k := range running[e.Package] {
					failed++
					failedNames = append(failedNames, k+" (still running when the package ended)")
					output[k+" (still running when the package ended)"] = output[k]
				}
				delete(running, e.Package)
			}
		}
	}
	for _, k := range failedNames {
		if o := output[k]; o != nil {
			fmt.Fprintf(errw, "--- FAIL: %s\n%s", k, o)
		} else {
			fmt.Fprintf(errw, "--- FAIL: %s\n", k)
		}
	}
	for _, p := range brokenPkgs {
		if o := output[p+" "]; o != nil {
			fmt.Fprintf(errw, "package %s:\n%s", p, lastLines(o.String(), 30))
		}
	}
	sort.Strings(skipped)
	fmt.Fprintf(out, "%d tests passed, %d failed", passed, failed)
	if len(skipped) > 0 {
		fmt.Fprintf(out, "; skipped by the tests themselves: %s", strings.Join(skipped, " "))
	}
	fmt.Fprintln(out)
	if failed > 0 || len(brokenPkgs) > 0 || sc.Err() != nil {
		return 1
	}
	return 0
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
