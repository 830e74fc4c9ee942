package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every bench flag has a row in docs/bench.md's flag tables (the workload
// flags' generated from lab/fields, the run's own written there), and that row's
// last column ("in valkey-benchmark / memtier") says what the other tools
// call it or that they have none: the letters collide with those tools'
// habits (-n, -c, -d, -s, -r), so a flag missing from the table is a trap
// left unmarked.
func TestBenchDocFlagTablesNameEveryBenchFlag(t *testing.T) {
	code, help, _ := linerate(t, "", "", "bench", "--help") // help is on stdout
	if code != 0 {
		t.Fatalf("bench --help: exit %d\n%s", code, help)
	}
	flags := regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(help, -1)
	if len(flags) < 20 {
		t.Fatalf("read %d flags from bench --help:\n%s", len(flags), help)
	}
	b, err := os.ReadFile("../../docs/bench.md")
	if err != nil {
		t.Fatal(err)
	}
	const header = "| flag | meaning | default | in valkey-benchmark / memtier |"
	tables := strings.Split(string(b), header)[1:]
	if len(tables) != 2 {
		t.Fatalf("docs/bench.md has %d flag tables %q, want 2 (workload, the run's own)", len(tables), header)
	}
	var rows [][]string
	for _, table := range tables {
		for _, line := range strings.Split(table, "\n")[2:] { // after the |---| line
			if !strings.HasPrefix(line, "|") {
				break
			}
			// A cell may hold an escaped pipe (`--json FILE\|-`).
			cells := strings.Split(strings.ReplaceAll(line, `\|`, "¦"), "|")
			rows = append(rows, cells[1:len(cells)-1])
		}
	}
	for _, f := range flags {
		name := "--" + f[1]
		found := false
		for _, r := range rows {
			if len(r) == 4 && regexp.MustCompile("`[^`]*"+regexp.QuoteMeta(name)+`\b[^`+"`"+`]*`+"`").MatchString(r[0]) {
				found = true
				if strings.TrimSpace(r[3]) == "" {
					t.Errorf("docs/bench.md flag table: %s has an empty \"in valkey-benchmark / memtier\" column", name)
				}
			}
		}
		if !found {
			t.Errorf("docs/bench.md has no flag table row for bench %s", name)
		}
	}
}
