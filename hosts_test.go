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
		"go.mod":                 "module " + module + "\n",
		"infra/netns/host.go":    "package netns\n\ntype Host struct{}\n\nvar _ any = (*Host)(nil)\n",
		"a/assert.go":            "package a\n\nimport " + imp + "\n\nfunc f(h any) bool { _, ok := h.(*netns.Host); return ok }\n",
		"b/param.go":             "package b\n\nimport ns " + imp + "\n\nfunc f(h *ns.Host) {}\n",
		"c/switch.go":            "package c\n\nimport " + imp + "\n\nfunc f(h any) {\n\tswitch h.(type) {\n\tcase *netns.Host:\n\t}\n}\n",
		"d/d_test.go":            "package d\n\nimport " + imp + "\n\nvar _ = any(nil).(*netns.Host)\n",
		"e/other.go":             "package e\n\nimport \"github.com/vishvananda/netns\"\n\nvar _ *netns.Host\n",
		"f/settings.go":          "package f\n\nimport " + imp + "\n\nvar _ = netns.Settings{}\n",
		"testdata/x/x.go":        "package x\n\nimport " + imp + "\n\nvar _ *netns.Host\n",
		"g/testdata/y/y.go":      "package y\n\nimport " + imp + "\n\nvar _ *netns.Host\n",
		"infra/netns/sub/sub.go": "package sub\n\nimport " + imp + "\n\nvar _ *netns.Host\n",
	})
	got := netnsHostUses(t, root)
	want := []string{"a/assert.go:5", "b/param.go:5", "c/switch.go:7", "infra/netns/sub/sub.go:5"}
	if !slices.Equal(got, want) {
		t.Errorf("uses of netns.Host\n got %q\nwant %q", got, want)
	}
}

// netnsHostUses lists file:line of each selector naming netns.Host in the
// non-test Go files under root, outside infra/netns itself, sorted.
func netnsHostUses(t *testing.T, root string) []string {
	t.Helper()
	var uses []string
	own := strings.TrimPrefix(netnsPkg, module+"/")
	walkGo(t, root, func(rel, name string, fset *token.FileSet, f *ast.File) {
		local := importName(f, netnsPkg)
		if rel == own || strings.HasSuffix(name, "_test.go") || local == "" {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Host" {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == local {
				uses = append(uses, fmt.Sprintf("%s:%d", path.Join(rel, name), fset.Position(sel.Pos()).Line))
			}
			return true
		})
	})
	slices.Sort(uses)
	return uses
}
