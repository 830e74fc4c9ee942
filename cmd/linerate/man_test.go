package main

// The man pages, man/linerate.1 and man/linerate-CMD.1, are drawn from the
// command tree: the same usage lines, prose and flags as --help, in troff
// (man(7) macros). TestManPages fails when the checked-in pages differ from
// the tree; make man (-update-man) writes them again.

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

var updateMan = flag.Bool("update-man", false, "write man/*.1 from the command tree")

func TestManPages(t *testing.T) {
	dir := filepath.Join("..", "..", "man")
	pages := manPages(newRoot(nil))
	if *updateMan {
		writeManPages(t, dir, pages)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	for _, f := range old {
		if _, ok := pages[filepath.Base(f)]; !ok {
			t.Errorf("%s: no such command any more; run make man", f)
		}
	}
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("man/%s is not what the command tree makes (%v); run make man", name, err)
		}
	}
}

func writeManPages(t *testing.T, dir string, pages map[string][]byte) {
	old, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// manPages is the page of root and of each of its commands, by file name.
func manPages(root *cobra.Command) map[string][]byte {
	pages := map[string][]byte{"linerate.1": manPage(root)}
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			pages["linerate-"+c.Name()+".1"] = manPage(c)
		}
	}
	return pages
}

// manPage is cmd's page: NAME, SYNOPSIS, DESCRIPTION, COMMANDS, OPTIONS,
// SEE ALSO.
func manPage(cmd *cobra.Command) []byte {
	var b bytes.Buffer
	name := strings.ReplaceAll(cmd.CommandPath(), " ", "-")
	fmt.Fprintf(&b, ".TH %q 1 \"\" \"linerate\" \"linerate manual\"\n", strings.ToUpper(name))
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", name, roff(cmd.Short))
	b.WriteString(".SH SYNOPSIS\n.nf\n")
	for _, l := range usageLines(cmd) {
		l = strings.TrimSpace(strings.TrimPrefix(l, "Usage:"))
		fmt.Fprintf(&b, "%s\n", roffLine(l))
	}
	b.WriteString(".fi\n")
	if cmd.Long != "" {
		b.WriteString(".SH DESCRIPTION\n")
		manProse(&b, cmd.Long)
	}
	if cmd.HasAvailableSubCommands() {
		b.WriteString(".SH COMMANDS\n")
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s\n", roff(c.Name()), roff(c.Short))
			}
		}
	}
	if rows := flagRows(cmd.LocalFlags()); len(rows) > 0 {
		b.WriteString(".SH OPTIONS\n")
		for _, r := range rows {
			manFlag(&b, r)
		}
	}
	b.WriteString(".SH SEE ALSO\n")
	if cmd.HasParent() {
		b.WriteString("\\fBlinerate\\fR(1)\n")
	} else {
		var see []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				see = append(see, "\\fBlinerate-"+roff(c.Name())+"\\fR(1)")
			}
		}
		b.WriteString(strings.Join(see, ",\n") + "\n")
	}
	return b.Bytes()
}

func manFlag(b *bytes.Buffer, r flagRow) {
	b.WriteString(".TP\n")
	if r.short != "" {
		fmt.Fprintf(b, "\\fB\\-%s\\fR, ", roff(r.short))
	}
	fmt.Fprintf(b, "\\fB\\-\\-%s\\fR", roff(r.long))
	if r.placeholder != "" {
		fmt.Fprintf(b, " \\fI%s\\fR", roff(r.placeholder))
	}
	fmt.Fprintf(b, "\n%s\n", roffLine(r.usage))
}

// manProse is help prose in troff: paragraphs filled, indented lines
// (examples, tables) kept as they are.
func manProse(b *bytes.Buffer, text string) {
	literal := false
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		indented := strings.HasPrefix(l, " ")
		switch {
		case l == "":
			if literal {
				b.WriteString(".fi\n")
				literal = false
			}
			b.WriteString(".PP\n")
			continue
		case indented && !literal:
			b.WriteString(".nf\n")
			literal = true
		case !indented && literal:
			b.WriteString(".fi\n")
			literal = false
		}
		b.WriteString(roffLine(l) + "\n")
	}
	if literal {
		b.WriteString(".fi\n")
	}
}

// roff escapes text for troff: backslashes and hyphens.
func roff(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
}

// roffLine is a line of text that troff does not read as a request.
func roffLine(s string) string {
	s = roff(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
