package main

// The help every command prints on --help and linerate help CMD, on
// stdout: its usage lines, its prose, its flags. The flags are drawn here
// rather than by pflag so that they read the same everywhere: booleans as
// plain switches, a placeholder that says what the value is, durations as
// written (60s, not 1m0s).

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// usageAnnotation holds a command's usage lines as its help text gives
// them ("Usage: linerate NAME ...", more forms indented below).
const usageAnnotation = "linerate-usage"

// usageLines is cmd's usage, one line per form, each starting "Usage: "
// or indented under it.
func usageLines(cmd *cobra.Command) []string {
	if u := cmd.Annotations[usageAnnotation]; u != "" {
		return strings.Split(u, "\n")
	}
	if !cmd.HasParent() {
		return []string{rootUsage}
	}
	line := "Usage: " + cmd.CommandPath()
	if cmd.HasAvailableSubCommands() {
		line += " <command>"
	}
	if cmd.HasAvailableLocalFlags() {
		line += " [flags]"
	}
	return []string{line}
}

// writeHelp prints cmd's help.
func writeHelp(w io.Writer, cmd *cobra.Command) {
	if !cmd.HasParent() {
		writeRootHelp(w, cmd)
		return
	}
	fmt.Fprintln(w, strings.Join(usageLines(cmd), "\n"))
	if cmd.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(cmd.Long, "\n"))
	} else if cmd.Short != "" {
		fmt.Fprintf(w, "\n%s.\n", upperFirst(cmd.Short))
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintln(w, "\nCommands:")
		writeCommands(w, cmd)
	}
	if fl := flagLines(cmd.LocalFlags()); len(fl) > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s", strings.Join(fl, ""))
	}
}

// The root's prose: what linerate is, and where to start.
const (
	rootIntro = "linerate measures how fast Valkey/Redis servers move large values (1-64 MB)."
	startHere = `Start here:
  make demo                                  # five versions, a local campaign, charts, report
  linerate bench -p 6379 -s 8MiB -d 5s       # one measurement against a running server
  linerate servers install valkey@9.1        # a server version, unpacked privately
  linerate sweep plan sweeps/campaigns/local.yaml`
)

func writeRootHelp(w io.Writer, root *cobra.Command) {
	fmt.Fprintf(w, "%s\n\n%s   (linerate <command> --help for its flags)\n\nCommands:\n", rootIntro, rootUsage)
	writeCommands(w, root)
	fmt.Fprintf(w, "\n%s\n\nFlags:\n%s", startHere, strings.Join(flagLines(root.LocalFlags()), ""))
}

// writeCommands lists cmd's subcommands with their summaries.
func writeCommands(w io.Writer, cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			fmt.Fprintf(w, "  %-10s %s\n", c.Name(), c.Short)
		}
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// flagRow is one flag as help shows it: "-s, --name PLACEHOLDER" and what
// it does, with its default.
type flagRow struct{ short, long, placeholder, usage string }

// flagRows are fs's visible flags but help, in the order they were bound.
func flagRows(fs *pflag.FlagSet) []flagRow {
	var rows []flagRow
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		ph, usage := placeholder(f)
		rows = append(rows, flagRow{f.Shorthand, f.Name, ph, usage + defaultNote(f)})
	})
	return rows
}

// flagLines is one line per flag of fs (see flagRows), usages aligned:
// "  -s, --name PLACEHOLDER   usage (default D)".
func flagLines(fs *pflag.FlagSet) []string {
	rows := flagRows(fs)
	left := make([]string, len(rows))
	width := 0
	for i, r := range rows {
		left[i] = "      --" + r.long
		if r.short != "" {
			left[i] = "  -" + r.short + ", --" + r.long
		}
		if r.placeholder != "" {
			left[i] += " " + r.placeholder
		}
		width = max(width, len(left[i]))
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%-*s   %s\n", width, left[i], r.usage)
	}
	return out
}

// placeholders name what a string flag's value is, where its name alone
// does not say it.
var placeholders = map[string]string{
	"json": "FILE", "ceiling": "FILE", "cacert": "FILE", "cert": "FILE", "key": "FILE",
	"hgrm-dir": "DIR", "state-dir": "DIR", "store": "DIR", "profiles": "DIR", "dist": "DIR",
	"metrics-listen": "ADDR", "agent-metrics-listen": "ADDR", "docker": "CMD",
	"start-at": "UNIXNANO", "server": "USER@HOST", "client": "USER@HOST",
	"public-key": "FILE", "private-key": "FILE", "snapshot": "FILE", "root": "DIR",
	"only": "PATTERN", "ssh-from": "CIDR", "aws-endpoint": "URL", "endpoint": "URL",
	"cell": "ID", "campaign": "ID", "out": "DIR", "runtime": "SUITE", "suite": "SUITE",
	"connections": "N", "value-size": "SIZE", "zones": "ZONES", "provider": "PROVIDER",
	"aws-profile": "NAME", "profile": "NAME", "instance-type": "TYPE",
}

// placeholder is the word that stands for f's value after its name, and
// f's usage without the backquotes that may give it (pflag's way): by
// type (DURATION, N), by name (FILE, DIR), else the value type's own name.
func placeholder(f *pflag.Flag) (string, string) {
	name, usage := pflag.UnquoteUsage(f)
	if strings.Contains(f.Usage, "`") {
		return name, usage
	}
	switch name {
	case "":
		return "", usage // a boolean: a plain switch
	case "duration":
		return "DURATION", usage
	case "int", "int64", "uint", "uint64":
		return "N", usage
	case "float", "float64":
		return "NUMBER", usage
	case "string":
		if p, ok := placeholders[f.Name]; ok {
			return p, usage
		}
		return strings.ToUpper(f.Name), usage
	}
	if name == strings.ToLower(name) && !strings.ContainsAny(name, "|:@,") {
		return strings.ToUpper(name), usage
	}
	return name, usage
}

// defaultNote is " (default D)" when f has a default worth saying.
func defaultNote(f *pflag.Flag) string {
	d := f.DefValue
	switch {
	case f.Value.Type() == "bool":
		if d == "true" {
			return " (on unless --" + f.Name + "=false)"
		}
		return ""
	case d == "" || d == "0" || d == "[]" || d == "0s":
		return ""
	case strings.Contains(f.Usage, "(default"):
		return "" // the usage says it in its own words
	case f.Value.Type() == "duration":
		if v, err := time.ParseDuration(d); err == nil {
			d = shortDuration(v)
		}
	case f.Value.Type() == "string":
		d = fmt.Sprintf("%q", d)
	}
	return " (default " + d + ")"
}

// shortDuration is d as one would write it: 60s, 15m, 4h, 1h30m, 200ms.
func shortDuration(d time.Duration) string {
	switch {
	case d <= time.Minute && d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d < time.Second:
		return d.String()
	}
	s := d.String()
	for _, zero := range []string{"m0s", "h0m"} {
		if strings.HasSuffix(s, zero) {
			s = strings.TrimSuffix(s, zero[1:])
		}
	}
	return s
}
