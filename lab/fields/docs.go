package fields

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab"
)

// TableHeader is the first line of the docs' flag table.
const TableHeader = "| flag | meaning | default | in valkey-benchmark / memtier |"

// Markdown is the docs' flag table of the workload flags, one row per
// Registry entry, as docs/bench.md holds it between its markers.
func Markdown() string {
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	var w lab.Workload
	BindFlags(fs, &w)
	var b strings.Builder
	b.WriteString(TableHeader + "\n|---|---|---|---|\n")
	for _, f := range Registry {
		fl := fs.Lookup(f.Flag)
		cells := []string{"`" + usage(fl) + "`", f.Meaning, f.shownDefault(fl), f.Others}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

// usage is the flag as --help prints it: "-c, --connections N".
func usage(fl *pflag.Flag) string {
	u := "--" + fl.Name
	if fl.Shorthand != "" {
		u = "-" + fl.Shorthand + ", " + u
	}
	if word, _ := pflag.UnquoteUsage(fl); word != "" {
		u += " " + word
	}
	return u
}

// shownDefault is the docs' default column: what the field starts at, or
// what Resolve fills in (Shown), or none.
func (f Field) shownDefault(fl *pflag.Flag) string {
	if f.Shown != "" {
		return f.Shown
	}
	switch fl.DefValue {
	case "", "0", "0s", "false":
		return "none"
	}
	return fl.DefValue
}
