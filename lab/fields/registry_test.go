package fields_test

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
)

var update = flag.Bool("update", false, "rewrite docs/bench.md's generated flag table")

func bind(t *testing.T, args []string) (lab.Workload, *pflag.FlagSet) {
	t.Helper()
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	var w lab.Workload
	fields.BindFlags(fs, &w)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return w, fs
}

// Every field of lab.Workload has its Registry entry: a field added to
// the schema without one would have no flag, no argv and no docs row.
func TestEveryWorkloadFieldIsRegistered(t *testing.T) {
	byGo := map[string]bool{}
	for _, f := range fields.Registry {
		byGo[f.Go] = true
	}
	var walk func(typ reflect.Type, prefix string)
	walk = func(typ reflect.Type, prefix string) {
		for i := range typ.NumField() {
			sf := typ.Field(i)
			name := prefix + sf.Name
			if byGo[name] {
				continue
			}
			nested := false
			for g := range byGo {
				nested = nested || strings.HasPrefix(g, name+".")
			}
			if nested && sf.Type.Kind() == reflect.Struct {
				walk(sf.Type, name+".") // each of its fields is a flag of its own
				continue
			}
			t.Errorf("lab.Workload.%s has no fields.Registry entry", name)
		}
	}
	walk(reflect.TypeOf(lab.Workload{}), "")
}

// Every entry says each consumer's part or why it has none.
func TestEveryEntryIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range fields.Registry {
		switch {
		case f.Flag == "" || seen[f.Flag]:
			t.Errorf("%+v: no flag name, or a second entry for it", f)
		case (f.Key == "") == (f.NoKey == ""):
			t.Errorf("--%s: give a campaign key or why it has none (NoKey), not both", f.Flag)
		case (f.Column == "") == (f.NoColumn == ""):
			t.Errorf("--%s: give an export column or why it is not exported (NoColumn), not both", f.Flag)
		case f.Help == "" || f.Meaning == "" || f.Others == "":
			t.Errorf("--%s: help, meaning and the other tools' names are all needed", f.Flag)
		case f.Preset && f.Default != "":
			t.Errorf("--%s: starts at Resolve's default or at Default, not both", f.Flag)
		}
		if f.Example == "" {
			t.Errorf("--%s has no Example", f.Flag)
		}
		seen[f.Flag] = true
	}
}

// Every field goes flag -> Workload -> Args -> flag and comes back the
// same, and each example changed its field: Args leaves none out (the
// password alone, which goes through PasswordEnv).
func TestEveryFieldRoundTrips(t *testing.T) {
	var args []string
	for _, f := range fields.Registry {
		args = append(args, "--"+f.Flag+"="+f.Example)
	}
	def, _ := bind(t, nil)
	got, fs := bind(t, args)
	if large, _ := fs.GetBool("keyspace-large"); !large {
		t.Errorf("--keyspace-large did not parse")
	}
	back, fs2 := bind(t, fields.Args(got))
	if large, _ := fs2.GetBool("keyspace-large"); !large {
		t.Errorf("Args left out --keyspace-large for -n %d of %s", got.Keyspace, got.ValueSz)
	}
	gv, dv, bv := reflect.ValueOf(got), reflect.ValueOf(def), reflect.ValueOf(back)
	for _, f := range fields.Registry {
		if f.Go == "" {
			continue
		}
		g, d, b := fieldOf(gv, f.Go), fieldOf(dv, f.Go), fieldOf(bv, f.Go)
		if reflect.DeepEqual(g, d) {
			t.Errorf("--%s=%s left %s at its default %v", f.Flag, f.Example, f.Go, d)
		}
		want := g
		if f.Flag == "password" {
			want = ""
		}
		if !reflect.DeepEqual(b, want) {
			t.Errorf("--%s: %s is %v after Args, want %v (args %q)", f.Flag, f.Go, b, want, fields.Args(got))
		}
	}
}

func fieldOf(v reflect.Value, path string) any {
	for _, name := range strings.Split(path, ".") {
		v = v.FieldByName(name)
	}
	return v.Interface()
}

// Every Registry flag is a bench flag, and the bench has no workload flag
// of its own outside the Registry.
func TestBindFlagsBindsTheRegistry(t *testing.T) {
	_, fs := bind(t, nil)
	n := 0
	fs.VisitAll(func(fl *pflag.Flag) {
		n++
		if _, ok := fields.Lookup(fl.Name); !ok {
			t.Errorf("--%s is bound but has no Registry entry", fl.Name)
		}
	})
	if n != len(fields.Registry) {
		t.Errorf("%d flags bound for %d entries", n, len(fields.Registry))
	}
}

// docs/bench.md's workload flag table is Markdown()'s, between its
// markers; go test -run TestDocsFlagTable -update rewrites it.
func TestDocsFlagTable(t *testing.T) {
	const path = "../../docs/bench.md"
	const begin, end = "<!-- begin: fields.Markdown -->\n", "<!-- end: fields.Markdown -->"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok1 := strings.Cut(string(b), begin)
	table, tail, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("%s: no %q ... %q markers", path, begin, end)
	}
	want := fields.Markdown()
	if *update {
		if err := os.WriteFile(path, []byte(head+begin+want+end+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if table != want {
		t.Errorf("%s: the flag table differs from the Registry's; run go test ./lab/fields -run TestDocsFlagTable -update\n got:\n%s\nwant:\n%s", path, table, want)
	}
}

// Every flag the bounds name (bounds.go's rules, tls.go's and habits.go's
// checks) is a registry flag, written as the registry writes it
// ("-c/--connections" with its short flag), so a bound's error names a
// flag the bench has.
func TestBoundsNameRegistryFlags(t *testing.T) {
	flagName := regexp.MustCompile(`^(?:-(\w)/)?--([a-z][a-z0-9-]*)$`)
	n := 0
	for _, file := range []string{"bounds.go", "tls.go", "habits.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(node ast.Node) bool {
			lit, ok := node.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, _ := strconv.Unquote(lit.Value)
			m := flagName.FindStringSubmatch(s)
			if m == nil {
				return true
			}
			n++
			if fl, ok := fields.Lookup(m[2]); !ok {
				t.Errorf("%s: %q names no registry flag", file, s)
			} else if fl.Short != m[1] && m[1] != "" {
				t.Errorf("%s: %q, but --%s's short flag is %q", file, s, fl.Flag, fl.Short)
			}
			return true
		})
	}
	if n < 20 {
		t.Errorf("read %d flag names from the bounds; the rules are not where this test looks", n)
	}
}
