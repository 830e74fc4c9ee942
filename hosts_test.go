package linerate_test

import (
	"fmt"
	"go/ast"
	"go/token"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// netnsPkg is the provider package whose Host type no other package names:
// what a host can do beyond infra.Host is an optional interface there
// (infra.Entered, infra.SharedFiles), so the provider's package is the only
// place that knows which hosts can.
const netnsPkg = module + "/infra/netns"

// TestNoNetnsHostAssertionOutsideItsPackage: outside infra/netns no Go
// file, tests included, asserts *netns.Host. A test that brings up a netns
// pair reaches into it with netns.Of; other code asks for an optional
// interface of infra.Host.
func TestNoNetnsHostAssertionOutsideItsPackage(t *testing.T) {
	for _, m := range netnsHostAssertions(t, ".") {
		t.Errorf("%s asserts *netns.Host: use netns.Of(h) (infra/netns) in a test, an optional interface of infra.Host (infra/host.go) elsewhere", m)
	}
}

// TestNoNetnsHostOutsideItsPackage: outside infra/netns, no non-test code
// names netns.Host (a type assertion, a parameter, a conversion). Tests may:
// they build the pair they check.
func TestNoNetnsHostOutsideItsPackage(t *testing.T) {
	for _, m := range netnsHostUses(t, ".") {
		t.Errorf("%s names netns.Host: ask for an optional interface of infra.Host (infra/host.go) instead", m)
	}
}

// The rule itself, on a small tree: an assertion, a parameter and a type
// switch are each found, whatever the import is called; the package's own
// files, tests and other Host types are not.
func TestNetnsHostRuleOnATree(t *testing.T) {
	root := t.TempDir()
	imp := strconv.Quote(netnsPkg)
	writeTree(t, root, map[string]string{
		"go.mod":                  "module " + module + "\n",
		"infra/netns/host.go":     "package netns\n\ntype Host struct{}\n\nvar _ any = (*Host)(nil)\n",
		"a/assert.go":             "package a\n\nimport " + imp + "\n\nfunc f(h any) bool { _, ok := h.(*netns.Host); return ok }\n",
		"b/param.go":              "package b\n\nimport ns " + imp + "\n\nfunc f(h *ns.Host) {}\n",
		"c/switch.go":             "package c\n\nimport " + imp + "\n\nfunc f(h any) {\n\tswitch h.(type) {\n\tcase *netns.Host:\n\t}\n}\n",
		"d/d_test.go":             "package d\n\nimport " + imp + "\n\nvar _ = any(nil).(*netns.Host)\n",
		"e/other.go":              "package e\n\nimport \"github.com/vishvananda/netns\"\n\nvar _ *netns.Host\n",
		"f/settings.go":           "package f\n\nimport " + imp + "\n\nvar _ = netns.Settings{}\n",
		"testdata/x/x.go":         "package x\n\nimport " + imp + "\n\nvar _ *netns.Host\n",
		"g/testdata/y/y.go":       "package y\n\nimport " + imp + "\n\nvar _ *netns.Host\n",
		"infra/netns/sub/sub.go":  "package sub\n\nimport " + imp + "\n\nvar _ *netns.Host\n",
		"infra/netns/own_test.go": "package netns\n\nvar _ = any(nil).(*Host)\n",
		"h/h_test.go":             "package h\n\nimport n " + imp + "\n\nfunc f(h any) {\n\tswitch h.(type) {\n\tcase int, *n.Host:\n\t}\n}\n",
		"i/i_test.go":             "package i\n\nimport " + imp + "\n\nfunc f(h any) *netns.Host { return netns.Of(nil) }\n",
	})
	got := netnsHostUses(t, root)
	want := []string{"a/assert.go:5", "b/param.go:5", "c/switch.go:7", "infra/netns/sub/sub.go:5"}
	if !slices.Equal(got, want) {
		t.Errorf("uses of netns.Host\n got %q\nwant %q", got, want)
	}
	// Assertions, tests included; naming the type (b, i) is no assertion.
	got = netnsHostAssertions(t, root)
	want = []string{"a/assert.go:5", "c/switch.go:7", "d/d_test.go:5", "h/h_test.go:7"}
	if !slices.Equal(got, want) {
		t.Errorf("assertions to *netns.Host\n got %q\nwant %q", got, want)
	}
}

// netnsHostUses lists file:line of each selector naming netns.Host in the
// non-test Go files under root, outside infra/netns itself, sorted.
func netnsHostUses(t *testing.T, root string) []string {
	t.Helper()
	var uses []string
	netnsImporters(t, root, false, func(at string, fset *token.FileSet, f *ast.File, local string) {
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && isNetnsHost(sel, local) {
				uses = append(uses, fmt.Sprintf("%s:%d", at, fset.Position(sel.Pos()).Line))
			}
			return true
		})
	})
	slices.Sort(uses)
	return uses
}

// netnsHostAssertions lists file:line of each assertion to *netns.Host
// (x.(*netns.Host), or a case of a type switch) in the Go files under root,
// tests included, outside infra/netns itself, sorted.
func netnsHostAssertions(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	netnsImporters(t, root, true, func(at string, fset *token.FileSet, f *ast.File, local string) {
		add := func(e ast.Expr) {
			if star, ok := e.(*ast.StarExpr); ok && isNetnsHost(star.X, local) {
				found = append(found, fmt.Sprintf("%s:%d", at, fset.Position(e.Pos()).Line))
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeAssertExpr:
				if n.Type != nil { // nil: the x.(type) of a switch
					add(n.Type)
				}
			case *ast.TypeSwitchStmt:
				for _, c := range n.Body.List {
					for _, e := range c.(*ast.CaseClause).List {
						add(e)
					}
				}
			}
			return true
		})
	})
	slices.Sort(found)
	return found
}

// netnsImporters calls fn on each Go file under root that imports
// infra/netns, outside that package itself, with the file's slash path
// and the name it gives the import; test files only when tests is set.
func netnsImporters(t *testing.T, root string, tests bool, fn func(at string, fset *token.FileSet, f *ast.File, local string)) {
	t.Helper()
	own := strings.TrimPrefix(netnsPkg, module+"/")
	walkGo(t, root, func(rel, name string, fset *token.FileSet, f *ast.File) {
		local := importName(f, netnsPkg)
		if rel == own || (!tests && strings.HasSuffix(name, "_test.go")) || local == "" {
			return
		}
		fn(path.Join(rel, name), fset, f, local)
	})
}

// isNetnsHost says whether e is local.Host, local the name a file gives
// infra/netns.
func isNetnsHost(e ast.Expr, local string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Host" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == local
}
