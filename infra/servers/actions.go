package servers

// The operator's actions on the store (`linerate servers`), each printing
// what it did as text or JSON.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/debpkg"
)

// Request is one action as the operator gave it.
type Request struct {
	Action    string   // available, install, list, remove or path
	Selectors []string // NAME@VERSION
	Store     string   // the store directory; "" is the default
	Runtime   string   // install/path/remove: the suite the libraries come from
	Suite     string   // install: take the build from this suite only
	JSON      bool     // list/available/install
	Quiet     bool     // install: no progress lines
}

// ActionError is an action's failure, named as the operator wrote it
// ("install valkey@9.1").
type ActionError struct {
	What string
	Err  error
}

func (e *ActionError) Error() string { return e.What + ": " + e.Err.Error() }
func (e *ActionError) Unwrap() error { return e.Err }

// inputError is an error in what the operator gave.
type inputError struct{ error }

func (e inputError) Unwrap() error { return e.error }

func badf(format string, a ...any) error { return inputError{fmt.Errorf(format, a...)} }

// IsInput says whether err is the operator's: a request that does not
// parse, or a version that does not exist or is not installed.
func IsInput(err error) bool {
	return errors.As(err, new(inputError)) || errors.Is(err, ErrNoSuchVersion) || errors.Is(err, ErrUnknownServer) || errors.Is(err, ErrNotInstalled)
}

// Do runs r, writing what it did to out and an install's progress to
// log (unless Quiet).
func Do(ctx context.Context, r Request, out, log io.Writer) error {
	for flag, v := range map[string]string{"--runtime": r.Runtime, "--suite": r.Suite} {
		if v != "" && !slices.Contains(debpkg.Suites, v) {
			return badf("%s %q: unknown suite (accepted: %s)", flag, v, strings.Join(debpkg.Suites, ", "))
		}
	}
	var sels []Selector
	for _, a := range r.Selectors {
		sel, err := ParseSelector(a)
		if err != nil {
			return &ActionError{r.Action, inputError{err}}
		}
		sels = append(sels, sel)
	}
	switch {
	case len(sels) == 0 && (r.Action == "install" || r.Action == "remove" || r.Action == "path"):
		return &ActionError{r.Action, badf("name at least one NAME@VERSION, e.g. valkey@9.1")}
	case r.Action == "path" && len(sels) != 1:
		return &ActionError{r.Action, badf("name exactly one NAME@VERSION")}
	}
	st, err := Open(r.Store)
	if err != nil {
		return err
	}
	if r.Action == "install" && !r.Quiet {
		st.Log = log
	}
	a := actions{st: st, r: r, out: out}
	switch r.Action {
	case "available":
		return a.available(ctx, sels)
	case "install":
		return a.install(ctx, sels)
	case "list":
		return a.list()
	case "remove":
		return a.remove(sels)
	case "path":
		inst, err := st.Find(sels[0], r.Runtime)
		if err != nil {
			return &ActionError{"path", err}
		}
		_, err = fmt.Fprintln(out, inst.Server)
		return err
	}
	return badf("unknown action %q (accepted: available, install, list, remove, path)", r.Action)
}

type actions struct {
	st  *Store
	r   Request
	out io.Writer
}

func (a actions) json(v any) error {
	enc := json.NewEncoder(a.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes v as JSON when asked, else aligned rows under a header.
func (a actions) table(v any, header string, rows func(io.Writer)) error {
	if a.r.JSON {
		return a.json(v)
	}
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	rows(tw)
	return tw.Flush()
}

func (a actions) available(ctx context.Context, sels []Selector) error {
	var kinds []infra.Kind
	for _, s := range sels {
		kinds = append(kinds, s.Kind)
	}
	builds, err := a.st.Available(ctx, kinds...)
	if err != nil {
		return &ActionError{"available", err}
	}
	return a.table(builds, "NAME@VERSION\tDEBIAN VERSION\tSUITE", func(w io.Writer) {
		for _, b := range builds {
			fmt.Fprintf(w, "%s@%s\t%s\t%s\n", b.Kind, b.Version, b.DebVersion, b.Suite)
		}
	})
}

func (a actions) install(ctx context.Context, sels []Selector) error {
	var done []*Installed
	for _, sel := range sels {
		inst, err := a.st.Install(ctx, sel, InstallOptions{Suite: a.r.Suite, Runtime: a.r.Runtime})
		if err != nil {
			return &ActionError{"install " + sel.String(), err}
		}
		done = append(done, inst)
	}
	if a.r.JSON {
		return a.json(done)
	}
	for _, i := range done {
		fmt.Fprintf(a.out, "%s@%s\t%s\n", i.Kind, i.Version, i.Server)
	}
	return nil
}

func (a actions) list() error {
	list, err := a.st.List()
	if err != nil {
		return &ActionError{"list", err}
	}
	return a.table(list, "NAME@VERSION\tDEBIAN VERSION\tSUITE\tRUNTIME\tLIBC\tJEMALLOC\tSIZE", func(w io.Writer) {
		for _, i := range list {
			fmt.Fprintf(w, "%s@%s\t%s\t%s\t%s\t%s\t%s\t%d MB\n", i.Kind, i.Version, i.DebVersion, i.Suite, i.Runtime,
				i.Libraries["libc6"], i.Libraries["libjemalloc2"], i.SizeBytes>>20)
		}
	})
}

func (a actions) remove(sels []Selector) error {
	for _, sel := range sels {
		removed, err := a.st.Remove(sel, a.r.Runtime)
		if err != nil {
			return &ActionError{"remove " + sel.String(), err}
		}
		for _, i := range removed {
			fmt.Fprintf(a.out, "removed %s@%s (%s, runtime %s)\n", i.Kind, i.Version, i.DebVersion, i.Runtime)
		}
	}
	return nil
}
