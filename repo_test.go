// Package linerate_test holds the rules that span the whole module; it has
// tests only. Each rule reads the source with go/parser: no build, no
// network, well under a second.
package linerate_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/linerate/linerate"

// Packages from outside the module whose use starts goroutines of their
// own (servers, connection readers, transports): importing one counts like
// a go statement.
var outsideStarters = []string{
	"net/http",
	"net/http/httptest",
	"golang.org/x/crypto/ssh",
	"github.com/pkg/sftp",
	"github.com/valkey-io/valkey-go",
}

// srcDir is one directory of Go files, parsed.
type srcDir struct {
	rel       string // slash path from the module root, "." for the root
	hasTests  bool
	goStmt    bool            // a go statement in any file, tests included
	libGo     bool            // a go statement outside the tests
	imports   map[string]bool // every file's, tests included
	libImport map[string]bool // the non-test files'
	verified  bool            // a _test.go file calls goleak.VerifyTestMain
}

// TestGoroutineStartersVerifyNoLeaks: every package whose code or tests
// start goroutines — a go statement there, or a use of a package whose
// code starts some (ours, through its non-test imports, or one of
// outsideStarters) — checks that none outlives its tests:
// goleak.VerifyTestMain in the TestMain of that directory (one TestMain per
// directory: package x and package x_test build into one test binary).
// A package without tests has no test binary to check; its users do.
func TestGoroutineStartersVerifyNoLeaks(t *testing.T) {
	dirs := parseModule(t, ".")
	if len(dirs) < 10 {
		t.Fatalf("found %d package directories; is the test running at the module root?", len(dirs))
	}
	for _, m := range unverified(dirs) {
		t.Errorf("%s starts goroutines but no _test.go there calls goleak.VerifyTestMain: add it to the package's TestMain (a main_test.go when it has none)", m)
	}
}

// The rule itself, on a small tree: a go statement in a test, a use of a
// package that starts goroutines (two imports away, and from outside the
// module) each ask for the check; a package that starts none does not.
func TestGoroutineRuleOnATree(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"go.mod":                 "module " + module + "\n",
		"a/a.go":                 "package a\n\nfunc Start() { go func() {}() }\n",
		"b/b.go":                 "package b\n\nimport _ \"" + module + "/a\"\n",
		"c/c_test.go":            "package c_test\n\nimport _ \"" + module + "/b\"\n",
		"d/d_test.go":            "package d\n\nimport \"testing\"\n\nfunc TestD(t *testing.T) { go t.Log() }\n",
		"e/e_test.go":            "package e\n\nimport _ \"net/http\"\n",
		"pure/p.go":              "package pure\n\nimport \"strings\"\n\nvar _ = strings.ToUpper\n",
		"pure/p_test.go":         "package pure\n",
		"a/main_test.go":         "package a\n\nimport (\n\t\"testing\"\n\n\tleak \"go.uber.org/goleak\"\n)\n\nfunc TestMain(m *testing.M) { leak.VerifyTestMain(m) }\n",
		"testdata/x/x_test.go":   "package x\n\nfunc init() { go func() {}() }\n",
		"f/testdata/y/y_test.go": "package y\n\nfunc init() { go func() {}() }\n",
	})
	got := unverified(parseModule(t, root))
	want := []string{"c (uses b)", "d (has a go statement)", "e (uses net/http)"}
	if !slices.Equal(got, want) {
		t.Errorf("packages lacking the check\n got %q\nwant %q", got, want)
	}
}

// unverified names each directory with tests that starts goroutines
// without goleak's check, and why it counts, sorted.
func unverified(dirs map[string]*srcDir) []string {
	// starts[importPath]: using that package (its non-test code) may start
	// goroutines. A fixed point over the module's non-test imports.
	starts := map[string]bool{}
	for _, p := range outsideStarters {
		starts[p] = true
	}
	for _, d := range dirs {
		if d.libGo {
			starts[importPath(d.rel)] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for _, d := range dirs {
			ip := importPath(d.rel)
			if starts[ip] {
				continue
			}
			for imp := range d.libImport {
				if starts[imp] {
					starts[ip], changed = true, true
					break
				}
			}
		}
	}
	var missing []string
	for _, d := range dirs {
		if !d.hasTests || d.verified {
			continue
		}
		why := ""
		if d.goStmt {
			why = "has a go statement"
		} else {
			var via []string
			for imp := range d.imports {
				if starts[imp] {
					via = append(via, strings.TrimPrefix(imp, module+"/"))
				}
			}
			if len(via) > 0 {
				slices.Sort(via)
				why = "uses " + strings.Join(via, ", ")
			}
		}
		if why != "" {
			missing = append(missing, d.rel+" ("+why+")")
		}
	}
	slices.Sort(missing)
	return missing
}

func importPath(rel string) string {
	if rel == "." {
		return module
	}
	return module + "/" + rel
}

// parseModule parses every .go file under root, keyed by directory.
func parseModule(t *testing.T, root string) map[string]*srcDir {
	t.Helper()
	dirs := map[string]*srcDir{}
	walkGo(t, root, func(rel, name string, _ *token.FileSet, f *ast.File) {
		d := dirs[rel]
		if d == nil {
			d = &srcDir{rel: rel, imports: map[string]bool{}, libImport: map[string]bool{}}
			dirs[rel] = d
		}
		isTest := strings.HasSuffix(name, "_test.go")
		d.hasTests = d.hasTests || isTest
		for _, is := range f.Imports {
			ip, _ := strconv.Unquote(is.Path.Value)
			d.imports[ip] = true
			if !isTest {
				d.libImport[ip] = true
			}
		}
		leak := importName(f, "go.uber.org/goleak")
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				d.goStmt = true
				d.libGo = d.libGo || !isTest
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && isTest && leak != "" && sel.Sel.Name == "VerifyTestMain" {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == leak {
						d.verified = true
					}
				}
			}
			return true
		})
	})
	return dirs
}

// walkGo parses every .go file under root and hands it to fn with its
// directory (a slash path from root, "." for root) and file name;
// testdata, directories named with a leading "." or "_" and other modules
// are not packages, as for the go command.
func walkGo(t *testing.T, root string, fn func(rel, name string, fset *token.FileSet, f *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := e.Name()
		if e.IsDir() {
			if p != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if p != root {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(rel), name, fset, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// importName is what f calls the package it imports from ip, "" when it
// does not import it.
func importName(f *ast.File, ip string) string {
	for _, is := range f.Imports {
		if p, _ := strconv.Unquote(is.Path.Value); p == ip {
			if is.Name != nil {
				return is.Name.Name
			}
			return path.Base(ip)
		}
	}
	return ""
}

// writeTree writes files (slash path from root: content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, src := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// docs/architecture.md's package table names every package of the module
// (what `go list ./...` lists: every directory with a Go file) and no
// other, so the living design cannot drift from the tree unnoticed.
func TestArchitectureListsEveryPackage(t *testing.T) {
	b, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| floor | package | what it knows |")
	if !ok {
		t.Fatal("docs/architecture.md has no package table")
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		// "`a`, `b`" or "`.` (the module root, `repo_test.go`)"
		names := regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(cells[2], "")
		for _, name := range strings.Split(names, ",") {
			listed[strings.Trim(strings.TrimSpace(name), "`")] = true
		}
	}
	for rel := range parseModule(t, ".") {
		if !listed[rel] {
			t.Errorf("docs/architecture.md's package table has no row for %s", rel)
		}
		delete(listed, rel)
	}
	for name := range listed {
		t.Errorf("docs/architecture.md's package table lists %s, which is no package", name)
	}
}

// Package lab is the record's schema: neither it nor anything it imports
// from the module binds command-line flags (lab/fields does, above it).
func TestSchemaImportsNoFlagPackage(t *testing.T) {
	dirs := parseModule(t, ".")
	flagPkgs := []string{"flag", "github.com/spf13/pflag", "github.com/spf13/cobra"}
	seen := map[string]bool{}
	var visit func(rel string, via []string)
	visit = func(rel string, via []string) {
		if seen[rel] {
			return
		}
		seen[rel] = true
		d := dirs[rel]
		if d == nil {
			t.Fatalf("no package %s", rel)
		}
		for ip := range d.libImport {
			if slices.Contains(flagPkgs, ip) {
				t.Errorf("lab imports %s through %s", ip, strings.Join(append(via, rel), " -> "))
			}
			if inner, ok := strings.CutPrefix(ip, module+"/"); ok {
				visit(inner, append(via, rel))
			}
		}
	}
	visit("lab", nil)
}

// maxFuncLines is the longest a function outside the tests may be: past it
// a function does several things, each of which wants a name.
const maxFuncLines = 80

// TestNoLongFunctions: no function outside the tests is longer than
// maxFuncLines lines, from its func keyword to its closing brace.
func TestNoLongFunctions(t *testing.T) {
	fset := token.NewFileSet()
	var long []string
	err := filepath.WalkDir(".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := e.Name()
		if e.IsDir() {
			if p != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			id := filepath.ToSlash(p) + ":" + fd.Name.Name
			if n > maxFuncLines {
				long = append(long, id+" "+strconv.Itoa(n)+" lines")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(long) > 0 {
		t.Errorf("over %d lines, cut by what each part does:\n%s", maxFuncLines, strings.Join(long, "\n"))
	}
}
