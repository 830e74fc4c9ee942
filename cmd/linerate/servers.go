package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/debpkg"
	"github.com/linerate/linerate/infra/servers"
)

func init() {
	register(command{name: "servers", summary: "install server versions side by side (Debian builds, private store)", run: runServers})
}

const serversUsage = `Usage: linerate servers <available|install|list|remove|path> [NAME@VERSION...] [flags]

Keeps Valkey and Redis versions side by side in a private store, each with
its own libc, loader and jemalloc, unpacked from Debian's packages through a
private apt configuration. Nothing is installed on the system. The store is
$LINERATE_HOME (default: a linerate folder in your cache directory).

A selector NAME@VERSION picks the newest matching build: valkey@9.1,
valkey@8.1, valkey@8.0, redis@7.0, redis@8.0, or an exact version (9.1.2).

Examples:
  linerate servers available                  # what the mirror serves
  linerate servers install valkey@9.1 redis@7.0
  linerate servers install valkey@8.1 --runtime sid   # 8.1 code, sid's libc/jemalloc
  linerate servers list
  $(linerate servers path valkey@9.1) --port 7000 --save ''
  linerate servers remove redis@7.0

Flags:
`

func runServers(ctx context.Context, args []string) int {
	fs := pflag.NewFlagSet("servers", pflag.ContinueOnError)
	fs.SortFlags = false
	store := fs.String("store", "", "store directory (default $LINERATE_HOME or ~/.cache/linerate)")
	runtime := fs.String("runtime", "", "install/path/remove: suite the libraries come from (bookworm, bookworm-backports, trixie, sid); default the build's own")
	suite := fs.String("suite", "", "install: take the build from this suite only")
	asJSON := fs.Bool("json", false, "list/available/install: print JSON")
	quiet := fs.Bool("quiet", false, "install: no progress lines")
	fs.Usage = func() { fmt.Fprint(os.Stderr, serversUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "linerate servers: %v (see linerate servers --help)\n", err)
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "linerate servers: name an action: available, install, list, remove or path (see linerate servers --help)")
		return 2
	}
	for flag, v := range map[string]string{"--runtime": *runtime, "--suite": *suite} {
		if v != "" && !contains(debpkg.Suites, v) {
			fmt.Fprintf(os.Stderr, "linerate servers: %s %q: unknown suite (accepted: %s)\n", flag, v, strings.Join(debpkg.Suites, ", "))
			return 2
		}
	}
	action, rest := fs.Arg(0), fs.Args()[1:]
	var sels []servers.Selector
	for _, a := range rest {
		sel, err := servers.ParseSelector(a)
		if err != nil {
			fmt.Fprintf(os.Stderr, "linerate servers %s: %v\n", action, err)
			return 2
		}
		sels = append(sels, sel)
	}
	need := map[string]bool{"install": true, "remove": true, "path": true}
	if need[action] && len(sels) == 0 {
		fmt.Fprintf(os.Stderr, "linerate servers %s: name at least one NAME@VERSION, e.g. valkey@9.1\n", action)
		return 2
	}
	if action == "path" && len(sels) != 1 {
		fmt.Fprintln(os.Stderr, "linerate servers path: name exactly one NAME@VERSION")
		return 2
	}
	st, err := servers.Open(*store)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate servers: %v\n", err)
		return 1
	}
	if !*quiet && action == "install" {
		st.Log = os.Stderr
	}
	switch action {
	case "available":
		var kinds []infra.Kind
		for _, s := range sels {
			kinds = append(kinds, s.Kind)
		}
		builds, err := st.Available(ctx, kinds...)
		if err != nil {
			return fail("available", err)
		}
		if *asJSON {
			return printJSON(builds)
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME@VERSION\tDEBIAN VERSION\tSUITE")
		for _, b := range builds {
			fmt.Fprintf(tw, "%s@%s\t%s\t%s\n", b.Kind, b.Version, b.DebVersion, b.Suite)
		}
		tw.Flush()
	case "install":
		var done []*servers.Installed
		for _, sel := range sels {
			inst, err := st.Install(ctx, sel, servers.InstallOptions{Suite: *suite, Runtime: *runtime})
			if err != nil {
				return fail("install "+sel.String(), err)
			}
			done = append(done, inst)
		}
		if *asJSON {
			return printJSON(done)
		}
		for _, i := range done {
			fmt.Printf("%s@%s\t%s\n", i.Kind, i.Version, i.Server)
		}
	case "list":
		list, err := st.List()
		if err != nil {
			return fail("list", err)
		}
		if *asJSON {
			return printJSON(list)
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME@VERSION\tDEBIAN VERSION\tSUITE\tRUNTIME\tLIBC\tJEMALLOC\tSIZE")
		for _, i := range list {
			fmt.Fprintf(tw, "%s@%s\t%s\t%s\t%s\t%s\t%s\t%d MB\n", i.Kind, i.Version, i.DebVersion, i.Suite, i.Runtime,
				i.Libraries["libc6"], i.Libraries["libjemalloc2"], i.SizeBytes>>20)
		}
		tw.Flush()
	case "remove":
		for _, sel := range sels {
			removed, err := st.Remove(sel, *runtime)
			if err != nil {
				return fail("remove "+sel.String(), err)
			}
			for _, i := range removed {
				fmt.Printf("removed %s@%s (%s, runtime %s)\n", i.Kind, i.Version, i.DebVersion, i.Runtime)
			}
		}
	case "path":
		inst, err := st.Find(sels[0], *runtime)
		if err != nil {
			return fail("path", err)
		}
		fmt.Println(inst.Server)
	default:
		fmt.Fprintf(os.Stderr, "linerate servers: unknown action %q (accepted: available, install, list, remove, path)\n", action)
		return 2
	}
	return 0
}

func fail(what string, err error) int {
	fmt.Fprintf(os.Stderr, "linerate servers %s: %v\n", what, err)
	if errors.Is(err, servers.ErrNoSuchVersion) || errors.Is(err, servers.ErrUnknownServer) || errors.Is(err, servers.ErrNotInstalled) {
		return 2
	}
	return 1
}

func printJSON(v any) int {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return 1
	}
	return 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
