package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// cli is one command's flags and the way it ends: every message is a
// line "linerate WHO: …" on stderr; bad input exits 2, a failure 1.
type cli struct {
	*pflag.FlagSet
	name string // the command, for "see linerate NAME --help"
	who  string // whom messages are from: the command, or it and its action
	// input says which errors are the operator's (exit 2); nil: none.
	input func(error) bool
}

// newCLI is a command whose --help prints usage, then its flags in the
// order they are bound.
func newCLI(name, usage string) *cli {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage); fs.PrintDefaults() }
	return &cli{FlagSet: fs, name: name, who: name}
}

// parse reads args. With want set, min to max arguments must follow the
// flags (max < 0: any number), else want is what is said. done is true
// when the command ends there, with code: 0 after --help, 2 otherwise.
func (c *cli) parse(args []string, min, max int, want string) (code int, done bool) {
	err := c.Parse(args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		return 0, true
	case err != nil:
		return c.usage("%v", err), true
	case want != "" && (c.NArg() < min || (max >= 0 && c.NArg() > max)):
		return c.usage("%s", want), true
	}
	return 0, false
}

// usage says what is wrong with the command line and where help is.
func (c *cli) usage(format string, a ...any) int {
	return c.bad(format+" (see linerate %s --help)", append(a, c.name)...)
}

// bad says what is wrong with the operator's input.
func (c *cli) bad(format string, a ...any) int {
	c.say(format, a...)
	return 2
}

func (c *cli) say(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "linerate %s: "+format+"\n", append([]any{c.who}, a...)...)
}

// fail prints each line of err, then the hints, and says the exit code:
// 2 for the operator's input, 1 otherwise.
func (c *cli) fail(err error, hints ...string) int {
	for _, line := range append(strings.Split(err.Error(), "\n"), hints...) {
		if line != "" {
			c.say("%s", line)
		}
	}
	if c.input != nil && c.input(err) {
		return 2
	}
	return 1
}

// failAfter is fail for a command Ctrl-C can interrupt: 130 once ctx
// is done, for what is not the operator's input.
func (c *cli) failAfter(ctx context.Context, err error, hints ...string) int {
	code := c.fail(err, hints...)
	if code == 1 && ctx.Err() != nil {
		return 130
	}
	return code
}

// exit is 0 for nil, else fail's code.
func (c *cli) exit(err error) int {
	if err == nil {
		return 0
	}
	return c.fail(err)
}

// json prints v indented on stdout.
func (c *cli) json(v any) int {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return c.exit(enc.Encode(v))
}

// warnUnreadable names each file of a run directory that could not be
// read, and what became of it.
func (c *cli) warnUnreadable(files []string, what string) {
	for _, f := range files {
		c.say("warning: unreadable %s (%s)", f, what)
	}
}

// is says whether err holds an E.
func is[E error](err error) bool {
	var e E
	return errors.As(err, &e)
}
