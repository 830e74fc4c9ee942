package debpkg

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Package is one binary package as a suite's Packages index describes it.
type Package struct {
	Name         string `json:"name"`
	Version      string `json:"version"`
	Architecture string `json:"architecture"`
	Suite        string `json:"suite"`
	Section      string `json:"section,omitempty"`
	Filename     string `json:"filename,omitempty"`
	SHA256       string `json:"sha256,omitempty"`
	Size         int64  `json:"size,omitempty"`
	Depends      string `json:"-"`
	PreDepends   string `json:"-"`
	Provides     string `json:"-"`
}

// String is name=version/suite, the form errors and logs use.
func (p *Package) String() string { return p.Name + "=" + p.Version + "/" + p.Suite }

// DebFile is the file name apt-get download gives the package.
func (p *Package) DebFile() string {
	return p.Name + "_" + strings.ReplaceAll(p.Version, ":", "%3a") + "_" + p.Architecture + ".deb"
}

// Index is the parsed Packages index of one suite (one architecture plus
// "all").
type Index struct {
	Suite    string
	packages map[string][]*Package // by name, newest first
	provides map[string][]*Package // virtual name -> real packages
}

// ParseIndex reads a Packages file (deb822 stanzas). Only the fields the
// closure needs are kept.
func ParseIndex(suite string, r io.Reader) (*Index, error) {
	ix := &Index{Suite: suite, packages: map[string][]*Package{}, provides: map[string][]*Package{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	p := &Package{Suite: suite}
	flush := func() {
		if p.Name != "" && p.Version != "" {
			ix.add(p)
		}
		p = &Package{Suite: suite}
	}
	line := 0
	for sc.Scan() {
		line++
		t := sc.Bytes()
		if len(t) == 0 {
			flush()
			continue
		}
		if t[0] == ' ' || t[0] == '\t' {
			continue // continuation of a multi-line field we do not keep
		}
		i := bytes.IndexByte(t, ':')
		if i < 0 {
			return nil, fmt.Errorf("parse %s index line %d: no field name in %q", suite, line, t)
		}
		// Only the kept fields are turned into strings: the index is tens
		// of megabytes and most of it is descriptions and hashes.
		k, v := t[:i], bytes.TrimSpace(t[i+1:])
		switch string(k) {
		case "Package":
			p.Name = string(v)
		case "Version":
			p.Version = string(v)
		case "Architecture":
			p.Architecture = string(v)
		case "Section":
			p.Section = string(v)
		case "Filename":
			p.Filename = string(v)
		case "SHA256":
			p.SHA256 = string(v)
		case "Size":
			p.Size, _ = strconv.ParseInt(string(v), 10, 64)
		case "Depends":
			p.Depends = string(v)
		case "Pre-Depends":
			p.PreDepends = string(v)
		case "Provides":
			p.Provides = string(v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s index: %w", suite, err)
	}
	flush()
	return ix, nil
}

// ParseIndexFile parses the Packages file at path.
func ParseIndexFile(suite, path string) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s index: %w", suite, err)
	}
	defer f.Close()
	return ParseIndex(suite, f)
}

func (ix *Index) add(p *Package) {
	list := ix.packages[p.Name]
	i := 0
	for i < len(list) && CompareVersions(list[i].Version, p.Version) > 0 {
		i++
	}
	list = append(list, nil)
	copy(list[i+1:], list[i:])
	list[i] = p
	ix.packages[p.Name] = list
	for _, alt := range splitList(p.Provides) {
		ix.provides[alt.Name] = append(ix.provides[alt.Name], p)
	}
}

// Newest returns the newest version of name, or nil.
func (ix *Index) Newest(name string) *Package {
	if l := ix.packages[name]; len(l) > 0 {
		return l[0]
	}
	return nil
}

// Versions returns every version of name the index holds, newest first.
func (ix *Index) Versions(name string) []*Package { return ix.packages[name] }

// Find returns the package name at exactly version, or nil.
func (ix *Index) Find(name, version string) *Package {
	for _, p := range ix.packages[name] {
		if p.Version == version {
			return p
		}
	}
	return nil
}

// Relation is one alternative of a Depends field: name, optional operator
// and version.
type Relation struct {
	Name, Op, Version string
}

func (r Relation) String() string {
	if r.Op == "" {
		return r.Name
	}
	return r.Name + " (" + r.Op + " " + r.Version + ")"
}

// Satisfied reports whether version meets the relation's constraint.
func (r Relation) Satisfied(version string) bool {
	if r.Op == "" {
		return true
	}
	c := CompareVersions(version, r.Version)
	switch r.Op {
	case ">=":
		return c >= 0
	case "<=":
		return c <= 0
	case ">>", ">":
		return c > 0
	case "<<", "<":
		return c < 0
	case "=":
		return c == 0
	}
	return false
}

// splitList parses a comma-separated list of single relations (Provides).
func splitList(s string) []Relation {
	var out []Relation
	for _, alts := range ParseDepends(s) {
		out = append(out, alts...)
	}
	return out
}

// ParseDepends parses a Depends-style field into groups of alternatives:
// "a (>= 1) | b, c:any" gives [[a >= 1, b], [c]]. Architecture qualifiers
// and restriction lists are dropped.
func ParseDepends(s string) [][]Relation {
	var out [][]Relation
	for _, group := range strings.Split(s, ",") {
		var alts []Relation
		for _, alt := range strings.Split(group, "|") {
			alt = strings.TrimSpace(alt)
			if alt == "" {
				continue
			}
			alt = dropLists(alt)
			var r Relation
			name := alt
			if i := strings.IndexByte(alt, '('); i >= 0 {
				name = strings.TrimSpace(alt[:i])
				cons := strings.Trim(alt[i:], "() ")
				j := 0
				for j < len(cons) && strings.ContainsRune("<>=", rune(cons[j])) {
					j++
				}
				r.Op, r.Version = cons[:j], strings.TrimSpace(cons[j:])
			}
			if k := strings.IndexByte(name, ':'); k >= 0 {
				name = name[:k]
			}
			r.Name = name
			alts = append(alts, r)
		}
		if len(alts) > 0 {
			out = append(out, alts)
		}
	}
	return out
}

// Resolve returns the newest real package satisfying r, directly or
// through Provides.
func (ix *Index) Resolve(r Relation) *Package {
	for _, p := range ix.packages[r.Name] {
		if r.Satisfied(p.Version) {
			return p
		}
	}
	for _, p := range ix.provides[r.Name] {
		for _, pr := range splitList(p.Provides) {
			if pr.Name != r.Name {
				continue
			}
			// An unversioned Provides satisfies only unversioned relations.
			if r.Op == "" || (pr.Version != "" && r.Satisfied(pr.Version)) {
				return p
			}
		}
	}
	return nil
}

// isLibrary says whether a package is followed when collecting a shared
// library closure: Debian files shared libraries under the libs sections.
// Everything else a server depends on (systemd, adduser, debconf) is
// packaging for a system install, not something the binary loads.
func isLibrary(p *Package) bool {
	s := p.Section
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	return s == "libs" || s == "oldlibs"
}

// Closure returns the shared-library packages needed by roots, resolved in
// ix (the runtime suite): every Depends/Pre-Depends alternative that is a
// library package, followed transitively. roots themselves are not
// included. A library dependency that the runtime suite cannot satisfy is
// an error naming it.
func (ix *Index) Closure(roots []*Package) ([]*Package, error) {
	seen := map[string]bool{}
	for _, r := range roots {
		seen[r.Name] = true
	}
	var out []*Package
	queue := append([]*Package(nil), roots...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, field := range []string{p.PreDepends, p.Depends} {
			for _, alts := range ParseDepends(field) {
				dep, err := ix.pickLibrary(p, alts)
				if err != nil {
					return nil, err
				}
				if dep == nil || seen[dep.Name] {
					continue
				}
				seen[dep.Name] = true
				out = append(out, dep)
				queue = append(queue, dep)
			}
		}
	}
	return out, nil
}

// pickLibrary chooses the alternative of one dependency group to follow:
// the first that resolves to a library package. It returns nil when the
// group names no library at all, and an error when it names a library the
// index lacks or holds only in a version too old.
func (ix *Index) pickLibrary(from *Package, alts []Relation) (*Package, error) {
	var unsatisfied []string
	for _, r := range alts {
		if p := ix.Resolve(r); p != nil {
			if isLibrary(p) {
				return p, nil
			}
			continue
		}
		if old := ix.Newest(r.Name); old != nil && isLibrary(old) {
			unsatisfied = append(unsatisfied, fmt.Sprintf("%s (%s has %s)", r, ix.Suite, old.Version))
		}
	}
	if len(unsatisfied) > 0 {
		return nil, fmt.Errorf("%w: %s needs %s", ErrUnsatisfiable, from, strings.Join(unsatisfied, " or "))
	}
	return nil, nil
}

// Combine returns an index that looks in primary first and then in
// secondary: a backports suite is only a layer over its base suite, and
// like apt (which pins backports low) the base's version is preferred when
// it satisfies a dependency.
func Combine(name string, primary, secondary *Index) *Index {
	ix := &Index{Suite: name, packages: map[string][]*Package{}, provides: map[string][]*Package{}}
	for _, src := range []*Index{primary, secondary} {
		for n, l := range src.packages {
			ix.packages[n] = append(ix.packages[n], l...)
		}
		for n, l := range src.provides {
			ix.provides[n] = append(ix.provides[n], l...)
		}
	}
	return ix
}

// BaseSuite is the suite a backports suite layers over ("bookworm" for
// "bookworm-backports"), or suite itself.
func BaseSuite(suite string) string {
	if b, ok := strings.CutSuffix(suite, "-backports"); ok {
		return b
	}
	return suite
}

// dropLists removes [arch] and <profile> restriction lists from one
// relation, leaving "name (op version)".
func dropLists(alt string) string {
	var b strings.Builder
	depth, paren := 0, false
	for _, c := range alt {
		switch {
		case c == '(':
			paren = true
		case c == ')':
			paren = false
		case !paren && (c == '[' || c == '<'):
			depth++
			continue
		case !paren && (c == ']' || c == '>') && depth > 0:
			depth--
			continue
		}
		if depth == 0 {
			b.WriteRune(c)
		}
	}
	return strings.TrimSpace(b.String())
}
