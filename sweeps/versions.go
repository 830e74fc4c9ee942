package sweeps

// The server side of a campaign file: the server block (campaign-wide
// and per version) and the versions list.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/lab"
)

// serverSettings decodes a server block into out, which holds the defaults
// already; extra (may be nil) adds version-level fields.
func (d *decoder) serverSettings(n *yaml.Node, path string, out *ServerSettings, extra map[string]fieldFunc) {
	var own *yaml.Node // this block's persistence or args: check the two against each other
	fields := map[string]fieldFunc{
		"persistence": func(n *yaml.Node, p string) {
			own = n
			if s, ok := d.scalar(n, p, "one of "+infra.PersistencesForms); ok {
				if _, err := infra.ParsePersistence(s); err != nil || s == "" {
					d.fail(n, p, "%q: use %s", s, infra.PersistencesForms)
					return
				}
				out.Persistence = s
			}
		},
		"tls": func(n *yaml.Node, p string) { d.boolean(n, p, &out.TLS) },
		"bgsave-every": func(n *yaml.Node, p string) {
			d.duration(n, p, MinBGSaveEvery, lab.MaxDuration, "2s", &out.BGSaveEvery)
		},
		"stop-timeout": func(n *yaml.Node, p string) {
			d.duration(n, p, MinStopTimeout, MaxStopTimeout, "5s", &out.StopTimeout)
		},
		"cluster": func(n *yaml.Node, p string) {
			var v int64
			if d.integer(n, p, 1, MaxClusterNodes, &v) {
				out.Cluster, out.clusterAt, out.clusterField = int(v), n, p
			}
		},
		"io-threads": func(n *yaml.Node, p string) {
			var v int64
			if d.integer(n, p, 1, 128, &v) {
				out.IOThreads = int(v)
			}
		},
		"maxmemory": func(n *yaml.Node, p string) {
			s, ok := d.scalar(n, p, "a memory size such as 60gb")
			if ok && !memoryRE.MatchString(s) {
				d.fail(n, p, "%q: use a server memory size such as 2gb, 512mb or 0 (no limit)", s)
				return
			}
			out.MaxMemory = s
		},
		"cpus": func(n *yaml.Node, p string) {
			if s, ok := d.scalar(n, p, "a CPU list"); ok {
				l, err := lab.ParseCPUList(s)
				if err != nil {
					d.fail(n, p, "%v", err)
					return
				}
				if len(l) == 0 {
					d.fail(n, p, "%q: use %s", s, lab.CPUListForms)
					return
				}
				out.CPUs, out.cpusField = l, p
			}
		},
		"args": func(n *yaml.Node, p string) {
			own = n
			d.serverArgs(n, p, out)
		},
	}
	for k, f := range extra {
		fields[k] = f
	}
	d.mapping(n, path, fields)
	d.checkCluster(path, out)
	if own != nil && out.Persistence != "" {
		d.checkPersistenceArgs(own, path, out)
	}
}

// duration decodes a duration from lo to hi into out (setDur, as the
// calibrate block's); example is one such, for the messages.
func (d *decoder) duration(n *yaml.Node, p string, lo, hi time.Duration, example string, out *lab.Duration) {
	if s, ok := d.scalar(n, p, "a duration such as "+example); ok {
		if err := setDur(s, lo, hi, out); err != nil {
			d.fail(n, p, "%v, such as %s", err, example)
		}
	}
}

// serverArgs decodes an args list, added after the args out holds (a
// version's come after the campaign's: the server takes the last).
func (d *decoder) serverArgs(n *yaml.Node, p string, out *ServerSettings) {
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		d.fail(n, p, "want a list of arguments such as [--save, \"\"], got %s", kindName(n))
		return
	}
	var mine []string
	for i, el := range n.Content {
		el = deref(el)
		switch {
		case el.Kind == yaml.ScalarNode && el.ShortTag() == "!!null":
			mine = append(mine, "") // --save with nothing after it
		case el.Kind == yaml.ScalarNode:
			mine = append(mine, el.Value)
		default:
			d.fail(el, fmt.Sprintf("%s[%d]", p, i), "want an argument, got %s", kindName(el))
		}
	}
	if len(mine) > 0 && !strings.HasPrefix(mine[0], "--") {
		d.fail(n, p, "first argument %q is not an option; server args look like [--save, \"\"]", mine[0])
	}
	out.Args = append(append([]string(nil), out.Args...), mine...)
}

// checkPersistenceArgs refuses args that set persistence beside a
// persistence field; own is this block's field of the two.
func (d *decoder) checkPersistenceArgs(own *yaml.Node, path string, out *ServerSettings) {
	for _, a := range out.Args {
		for _, flag := range infra.PersistenceArgs {
			if a == flag {
				d.fail(own, join(path, "args"), "%s sets persistence, which %s already says (%s); give it once", a, join(path, "persistence"), out.Persistence)
				return
			}
		}
	}
}

func (d *decoder) versions(n *yaml.Node, path string, defaults ServerSettings) []VersionSpec {
	n = deref(n)
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.fail(n, path, "want a list of server versions (store, binary or image), got %s", kindName(n))
		return nil
	}
	var out []VersionSpec
	labels := map[string]int{}
	for i, vn := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		v, labelNode := d.version(vn, p, defaults)
		if v.Label != "" {
			if prev, dup := labels[v.Label]; dup {
				at := vn
				if labelNode != nil {
					at = labelNode
				}
				d.fail(at, p+".label", "label %q is already used by versions[%d]; add a distinct label:", v.Label, prev)
			}
			labels[v.Label] = i
		}
		out = append(out, v)
	}
	return out
}

// version decodes one version over the campaign's server defaults; the
// node of its label, when it gives one, is returned for errors about it.
func (d *decoder) version(vn *yaml.Node, p string, defaults ServerSettings) (VersionSpec, *yaml.Node) {
	v := VersionSpec{Line: vn.Line, Server: defaults}
	v.Server.Args = append([]string(nil), defaults.Args...)
	var labelNode *yaml.Node
	d.serverSettings(vn, p, &v.Server, d.versionFields(&v, &labelNode))
	set := 0
	for _, s := range []string{v.Store, v.Binary, v.Image} {
		if s != "" {
			set++
		}
	}
	if deref(vn).Kind == yaml.MappingNode {
		if set != 1 {
			d.fail(vn, p, "give exactly one of store (valkey@9.1), binary (/path/to/server) or image (valkey/valkey:9.1.0)")
		}
		if v.Runtime != "" && v.Store == "" {
			d.fail(vn, p+".runtime", "runtime applies to store versions only")
		}
	}
	if v.Server.Cluster > 0 && v.Image != "" {
		d.fail(v.Server.clusterAt, v.Server.clusterField, "a cluster's nodes are local processes (a store or binary version); %s runs one container on the server's port", v.Image)
	}
	if v.Label == "" {
		v.Label = defaultLabel(v)
	}
	if v.Label == "" && set == 1 && (v.Image == "" || strings.Contains(v.Image, ":")) {
		d.fail(vn, p+".label", "cannot derive a label from %q; add label: NAME", v.Selector())
	}
	return v, labelNode
}

// versionFields are a version's own fields beside the server settings.
func (d *decoder) versionFields(v *VersionSpec, labelNode **yaml.Node) map[string]fieldFunc {
	return map[string]fieldFunc{
		"store": func(n *yaml.Node, p string) {
			d.str(n, p, &v.Store)
			if v.Store != "" && !selectorRE.MatchString(v.Store) {
				d.fail(n, p, "%q: use NAME@VERSION such as valkey@9.1 or redis@7.0", v.Store)
			}
		},
		"runtime": func(n *yaml.Node, p string) {
			d.str(n, p, &v.Runtime)
			if v.Runtime != "" && !runtimeRE.MatchString(v.Runtime) {
				d.fail(n, p, "%q is not a runtime suite name such as sid", v.Runtime)
			}
		},
		"binary": func(n *yaml.Node, p string) {
			d.str(n, p, &v.Binary)
			if v.Binary != "" && !strings.HasPrefix(v.Binary, "/") {
				d.fail(n, p, "%q: give an absolute path to the server binary", v.Binary)
			}
		},
		"image": func(n *yaml.Node, p string) {
			d.str(n, p, &v.Image)
			if v.Image != "" && (strings.ContainsAny(v.Image, " \t") || !strings.Contains(v.Image, ":")) {
				d.fail(n, p, "%q: give an image with its tag such as valkey/valkey:9.1.0", v.Image)
			}
		},
		"label": func(n *yaml.Node, p string) {
			*labelNode = n
			v.LabelGiven = true
			d.str(n, p, &v.Label)
			if v.Label != "" && !labelRE.MatchString(v.Label) {
				d.fail(n, p, "%q: use letters, digits, . @ + - (it is part of every cell ID)", v.Label)
			}
		},
		"env": func(n *yaml.Node, p string) { v.Env = d.versionEnv(n, p) },
	}
}

// versionEnv decodes a version's env mapping of NAME: value.
func (d *decoder) versionEnv(n *yaml.Node, p string) map[string]string {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		d.fail(n, p, "want a mapping of NAME: value, got %s", kindName(n))
		return nil
	}
	env := map[string]string{}
	for j := 0; j+1 < len(n.Content); j += 2 {
		k := n.Content[j].Value
		kp := join(p, k)
		if !envKeyRE.MatchString(k) {
			d.fail(n.Content[j], kp, "not an environment variable name")
			continue
		}
		if _, dup := env[k]; dup {
			d.fail(n.Content[j], kp, "given twice")
			continue
		}
		var s string
		d.str(n.Content[j+1], kp, &s)
		env[k] = s
	}
	return env
}

// defaultLabel names a version in cell IDs before its real version is known:
// the store selector as written, an image as name-tag, a binary by its
// file name.
func defaultLabel(v VersionSpec) string {
	switch {
	case v.Store != "":
		return v.Store
	case v.Image != "":
		ref := v.Image
		if at := strings.Index(ref, "@"); at >= 0 {
			ref = ref[:at]
		}
		slash := strings.LastIndex(ref, "/")
		name, tag, ok := strings.Cut(ref[slash+1:], ":")
		if !ok {
			return ""
		}
		return sanitizeSegment(name + "-" + tag)
	case v.Binary != "":
		b := v.Binary[strings.LastIndex(v.Binary, "/")+1:]
		return sanitizeSegment(b)
	}
	return ""
}

// sanitizeSegment keeps an ID segment to characters that are safe in a file
// name and never "_", which joins segments in cell file names.
func sanitizeSegment(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '@', r == '+', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// clusterArgs are what the launcher sets on each node of a cluster.
var clusterArgs = []string{"--cluster-enabled", "--cluster-config-file", "--cluster-port", "--port"}

// checkCluster refuses what a cluster of out.Cluster nodes cannot be
// started with: fewer CPUs than nodes, TLS, args the launcher sets per
// node. It runs for each settings block (the campaign's, then each
// version's merged with it), so a version's cpus are held against the
// campaign's cluster too.
func (d *decoder) checkCluster(path string, out *ServerSettings) {
	n := out.Cluster
	if n == 0 {
		return
	}
	at, field := out.clusterAt, out.clusterField
	before := len(d.errs)
	defer func() { // a campaign-level problem is said once, not again per version
		kept := d.errs[:before]
		for _, e := range d.errs[before:] {
			if !slices.ContainsFunc(kept, func(o *SpecError) bool { return *o == *e }) {
				kept = append(kept, e)
			}
		}
		d.errs = kept
	}()
	switch {
	case len(out.CPUs) > 0 && len(out.CPUs) < n:
		d.fail(at, field, "%d nodes on cpus %s (%d CPUs): each node is pinned to a CPU of its own; give %s at least %d CPUs or fewer nodes",
			n, out.CPUs, len(out.CPUs), out.cpusField, n)
	case out.TLS:
		d.fail(at, field, "not with tls: the nodes' cluster bus and the bench's routing speak plain TCP")
	}
	for _, a := range out.Args {
		for _, f := range clusterArgs {
			if a == f {
				d.fail(at, field, "args %s: the launcher sets it on each node of a cluster", a)
			}
		}
	}
}
