// Package servers keeps server versions side by side in a local store:
// Debian's builds of Valkey and Redis, each unpacked with its own library
// closure (libc, loader and jemalloc included) by infra/debpkg, checked by
// starting it, and listed only once complete.
package servers

import (
	"fmt"
	"sort"
	"strings"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/debpkg"
)

// flavor says where Debian carries a server kind.
type flavor struct {
	kind     infra.Kind
	packages []string // the first holds the binaries; the second the *-server name link
	server   string   // the server executable, run by this name
	suites   []string // searched for builds, most stable first
}

var flavors = []flavor{
	{infra.Valkey, []string{"valkey-tools", "valkey-server"}, "valkey-server", []string{"bookworm-backports", "trixie", "sid"}},
	{infra.Redis, []string{"redis-tools", "redis-server"}, "redis-server", []string{"bookworm", "bookworm-backports", "trixie", "sid"}},
}

func flavorOf(k infra.Kind) (flavor, error) {
	for _, f := range flavors {
		if f.kind == k {
			return f, nil
		}
	}
	return flavor{}, fmt.Errorf("%w: %q (the store has: valkey, redis)", ErrUnknownServer, k)
}

// Selector names a server and a version prefix: valkey@9.1, redis@7.0.15,
// valkey (newest). An exact Debian version (redis@5:7.0.15-1~deb12u4) also
// matches.
type Selector struct {
	Kind    infra.Kind
	Version string // "" for any
}

func (s Selector) String() string {
	if s.Version == "" {
		return string(s.Kind)
	}
	return string(s.Kind) + "@" + s.Version
}

// ParseSelector parses NAME[@VERSION].
func ParseSelector(s string) (Selector, error) {
	name, ver, _ := strings.Cut(strings.TrimSpace(s), "@")
	sel := Selector{Kind: infra.Kind(strings.ToLower(name)), Version: ver}
	if _, err := flavorOf(sel.Kind); err != nil {
		return sel, fmt.Errorf("selector %q: %w; write NAME@VERSION, e.g. valkey@9.1 or redis@7.0", s, err)
	}
	if strings.ContainsAny(ver, " /") {
		return sel, fmt.Errorf("selector %q: bad version %q; write NAME@VERSION, e.g. valkey@9.1 or redis@7.0", s, ver)
	}
	return sel, nil
}

// Matches reports whether a build's versions satisfy the selector: the
// upstream version equals it or starts with it followed by a dot, or the
// Debian version equals it.
func (s Selector) Matches(upstream, debVersion string) bool {
	v := s.Version
	return v == "" || upstream == v || strings.HasPrefix(upstream, v+".") || debVersion == v
}

// Build is one installable server version.
type Build struct {
	Kind       infra.Kind `json:"kind"`
	Version    string     `json:"version"`     // upstream, as the server reports it
	DebVersion string     `json:"deb_version"` // exact Debian version
	Suite      string     `json:"suite"`
}

// newest sorts builds newest first; for one Debian version the most stable
// suite wins.
func sortBuilds(bs []Build) {
	rank := func(s string) int {
		for i, x := range debpkg.Suites {
			if x == s {
				return i
			}
		}
		return len(debpkg.Suites)
	}
	sort.SliceStable(bs, func(i, j int) bool {
		if bs[i].Kind != bs[j].Kind {
			return bs[i].Kind < bs[j].Kind
		}
		if c := debpkg.CompareVersions(bs[i].DebVersion, bs[j].DebVersion); c != 0 {
			return c > 0
		}
		return rank(bs[i].Suite) < rank(bs[j].Suite)
	})
}
