package main

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/linerate/linerate/infra/stopsignal"
	"github.com/linerate/linerate/sweeps/metrics"
)

// cli is one command's flags and the way it ends: every message is a
// line "linerate WHO: …" on stderr; bad input exits 2, a failure 1.
type cli struct {
	*pflag.FlagSet
	name, who string           // the command (see linerate NAME --help); whom messages are from
	input     func(error) bool // says which errors are the operator's (exit 2); nil: none
	stopped   context.Context  // once it is done, a failure is an interruption (130)
}

// help holds the commands' help texts, help/NAME.txt: the prose --help
// teaches, kept apart from the code that reads flags. Each starts with
// its usage lines ("Usage: linerate NAME ..."), then a blank line, then
// the prose; --help lists the flags after it.
//
//go:embed help/*.txt
var help embed.FS

// helpText is command name's help text.
func helpText(name string) string {
	b, err := help.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(fmt.Sprintf("no help text for %s: %v", name, err)) // a file missing from the build
	}
	return string(b)
}

// command is a subcommand made from its help text (see help) and its
// one-line summary. bind binds the command's flags on c and returns what
// runs it once they are parsed; that returns the exit code.
func command(text, short string, bind func(c *cli) func(ctx context.Context) int) *cobra.Command {
	usage, long, _ := strings.Cut(text, "\n\n")
	use := strings.TrimPrefix(strings.SplitN(usage, "\n", 2)[0], "Usage: linerate ")
	cmd := &cobra.Command{
		Use: use, Short: short, Long: strings.TrimRight(long, "\n"),
		Args:        cobra.ArbitraryArgs,
		Annotations: map[string]string{usageAnnotation: usage},
	}
	cmd.Flags().SortFlags = false
	c := &cli{FlagSet: cmd.Flags(), name: cmd.Name(), who: cmd.Name()}
	run := bind(c)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		// The first Ctrl-C, SIGTERM or hangup cancels the context so work
		// stops cleanly, records are written and what was started is torn
		// down; the teardown is abandoned only on a third within 10 s of a
		// second. Help and completion, which start nothing, keep the
		// default handling.
		ctx := stopsignal.Context(cmd.Context(), os.Stderr, func() { os.Exit(130) })
		return ended(run(ctx))
	}
	return cmd
}

// want checks the arguments that follow the flags: min to max of them
// (max < 0: any number), else want is said. done is true when the command
// ends there, with code 2.
func (c *cli) want(min, max int, want string) (code int, done bool) {
	if c.NArg() < min || (max >= 0 && c.NArg() > max) {
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

// end is the exit code for err, 0 for none; it prints each line of err.
func (c *cli) end(err error) int {
	if err == nil {
		return 0
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if line != "" {
			c.say("%s", line)
		}
	}
	switch {
	case c.input != nil && c.input(err):
		return 2
	case c.stopped != nil && c.stopped.Err() != nil:
		return 130
	}
	return 1
}

// json prints v indented on stdout.
func (c *cli) json(v any) int {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return c.end(enc.Encode(v))
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

const metricsListenHelp = "serve live OpenMetrics at http://ADDR/metrics while it runs, e.g. 127.0.0.1:9100 (off unless given; only on ADDR)"

const metricsLingerHelp = "with --metrics-listen: keep serving the final totals this long after the end, so the scrape after it reads them (0: close at once; Ctrl-C ends the wait)"

// lingerMetrics keeps s serving the run's final totals for d (said on
// stderr, unless the run was stopped), then closes it.
func lingerMetrics(ctx context.Context, who string, s *metrics.Server, d time.Duration) {
	if s == nil {
		return
	}
	if d > 0 && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "linerate %s: metrics stay at %s for %s, for the scrape after the end (--metrics-linger; Ctrl-C ends the wait)\n", who, s.URL(), d)
	}
	_ = s.CloseAfter(ctx, d)
}

// startMetrics serves cs on addr when it is set. It returns nil and exit
// code 0 when addr is empty, and nil and 2 (printed) for an address that
// cannot be listened on.
func startMetrics(who, addr string, cs ...prometheus.Collector) (*metrics.Server, int) {
	if addr == "" {
		return nil, 0
	}
	s, err := metrics.Listen(addr, cs...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate %s: %v\n", who, err)
		if is[*metrics.AddrError](err) {
			return nil, 2
		}
		return nil, 1
	}
	fmt.Fprintf(os.Stderr, "linerate %s: metrics at %s\n", who, s.URL())
	return s, 0
}
