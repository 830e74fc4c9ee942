// Package sweeps turns a campaign file into an ordered plan of cells, runs
// the plan against narrow interfaces (a server starter, a bencher), stores
// every cell atomically in a run directory that survives SIGKILL, and
// compares runs with statistics.
package sweeps

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/linerate/linerate/lab"
)

// Campaign is a campaign file as read and checked. Lists in the workload
// block are Axes: the plan is their cross product, under each version.
type Campaign struct {
	File        string         `json:"file"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Seed        uint64         `json:"seed"`
	Order       Order          `json:"order"`
	Repetitions int            `json:"repetitions"`
	Provider    Provider       `json:"provider"`
	Tuning      string         `json:"tuning,omitempty"` // tuning profile name, applied by the runner's caller
	Server      ServerSettings `json:"server"`           // defaults for every version
	Versions    []VersionSpec  `json:"versions"`
	Axes        []Axis         `json:"workload"`
	Estimate    EstimateParams `json:"estimate"`
	// Clients is how many client hosts run each cell's load together
	// (clients: N, 1-MaxClients; 0 is one); connections are the total.
	Clients int `json:"clients,omitempty"`
	// Calibrate is how the link is measured before the first cell (link.go).
	Calibrate Calibration `json:"calibrate"`
	// Source is the file as read; the run store keeps it beside the plan.
	Source []byte `json:"-"`

	lines        map[string]pos // field path -> where it is, for errors found after parsing
	estimateNode *yaml.Node     // the estimate block, kept for SetEstimateDefaults
}

// Order is how cells are sequenced.
type Order string

const (
	// OrderInterleave alternates version blocks A B | B A | A B … so a slow
	// drift of the host (thermal, noisy neighbours) spreads evenly over versions.
	OrderInterleave Order = "interleave"
	// OrderShuffle shuffles versions per round and cells per block with the
	// campaign seed: reproducible, and free of any periodic drift.
	OrderShuffle Order = "shuffle"
)

// Provider says where the hosts come from: a kind, and settings that are
// the kind's own. The campaign keeps them as written; the provider table
// (sweeps/session) knows the kinds and decodes the settings (Decode).
type Provider struct {
	Kind string `json:"kind"`
	// Settings are the block's other keys as plain values, for the record.
	Settings map[string]any `json:"settings,omitempty"`
	// NoLink: the kind's hosts share loopback, with no link between them
	// to calibrate. The provider table sets it (sweeps/session), as it sets
	// the estimate's defaults; a campaign file never does.
	NoLink bool `json:"-"`

	file string
	node *yaml.Node // the block: a scalar kind or a mapping
}

// DefaultProvider is the kind of a campaign that names none.
const DefaultProvider = "local"

// ServerSettings shape how a server version is started.
type ServerSettings struct {
	IOThreads int         `json:"io_threads,omitempty"` // io-threads (main thread included, as the servers count)
	MaxMemory string      `json:"maxmemory,omitempty"`  // passed as written: the server parses units (60gb)
	CPUs      lab.CPUList `json:"cpus,omitempty"`       // pin the server here
	// Persistence is infra's setting (none, rdb, aof-everysec,
	// aof-always); "" leaves the launcher's none, as the study ran.
	Persistence string `json:"persistence,omitempty"`
	// BGSaveEvery makes the runner ask for an RDB snapshot (BGSAVE) this
	// often while a cell runs, from the measured window's start, so a
	// short cell forks whatever the server's own save schedule; with
	// persistence rdb and no value, once in the middle of the window.
	BGSaveEvery lab.Duration `json:"bgsave_every,omitempty"`
	// StopTimeout is how long each step of stopping the server waits
	// (SHUTDOWN NOSAVE, then SIGTERM, then SIGKILL); 0 is the launcher's
	// 5s. A server that takes long to go (a huge dataset freed, a slow
	// disk under aof) gets more before it is killed.
	StopTimeout lab.Duration `json:"stop_timeout,omitempty"`
	// TLS serves TLS only, with certificates made for the run.
	TLS  bool     `json:"tls,omitempty"`
	Args []string `json:"args,omitempty"` // more server arguments, e.g. --save ""
	// Cluster, 1-MaxClusterNodes, starts that many server processes as
	// one Valkey/Redis Cluster (launch.Cluster: each pinned to its share
	// of CPUs, slots assigned by the launcher) and benches every cell of
	// the version with --cluster; 0 is one plain server.
	Cluster int `json:"cluster,omitempty"`

	clusterAt    *yaml.Node // where cluster is written, for the checks made once the rest is known
	clusterField string
	cpusField    string // where cpus is written
}

// MaxClusterNodes bounds server.cluster: the nodes share one server
// host, each pinned to CPUs of its own.
const MaxClusterNodes = 16

// MinBGSaveEvery bounds server.bgsave-every from below: a snapshot asked
// for more often would only find the last one still running.
const MinBGSaveEvery = 100 * time.Millisecond

// MinStopTimeout and MaxStopTimeout bound server.stop-timeout: a step
// shorter than a round trip kills servers that were stopping, and a
// teardown should not wait more than an hour per step.
const (
	MinStopTimeout = 100 * time.Millisecond
	MaxStopTimeout = time.Hour
)

// StopBound is how long stopping a server of these settings may take in
// all: its three steps and a margin, at least 30s.
func (s ServerSettings) StopBound() time.Duration {
	if d := 3*s.StopTimeout.D() + 5*time.Second; d > 30*time.Second {
		return d
	}
	return 30 * time.Second
}

// VersionSpec is one server version: exactly one of Store, Binary, Image.
type VersionSpec struct {
	// Label names the version in cell IDs until the real version is known;
	// a label given in the file names it always (two builds of one version).
	Label      string            `json:"label"`
	LabelGiven bool              `json:"label_given,omitempty"`
	Store      string            `json:"store,omitempty"`   // store selector, e.g. valkey@9.1
	Runtime    string            `json:"runtime,omitempty"` // store runtime suite, e.g. sid
	Binary     string            `json:"binary,omitempty"`  // a server binary path
	Image      string            `json:"image,omitempty"`   // a container image
	Env        map[string]string `json:"env,omitempty"`     // e.g. MALLOC_CONF
	Server     ServerSettings    `json:"server"`            // campaign defaults merged with this version's own
	Line       int               `json:"-"`
}

// Selector is how the version was asked for, for messages.
func (v VersionSpec) Selector() string {
	switch {
	case v.Store != "":
		return v.Store
	case v.Image != "":
		return v.Image
	}
	return v.Binary
}

// EstimateParams feed Plan.Estimate; the defaults depend on the provider.
type EstimateParams struct {
	ServerStart  lab.Duration `json:"server_start"`  // per version block
	CellOverhead lab.Duration `json:"cell_overhead"` // flush, connect, record
	PrefillRate  lab.Size     `json:"prefill_rate"`  // bytes per second written by prefill
}

// DefaultEstimate is the estimate on one machine: a fresh page costs
// ~13 µs here, so prefill writes ~300 MB/s; flush, connect, drain of large
// values in flight and the record took ~2-3 s per cell in local.yaml runs
// on 2 vCPUs. A provider whose hosts cost more per step says so
// (SetEstimateDefaults).
func DefaultEstimate() EstimateParams {
	return EstimateParams{ServerStart: lab.Duration(2 * time.Second), CellOverhead: lab.Duration(2 * time.Second), PrefillRate: 300 << 20}
}

// SetEstimateDefaults makes def the estimate's defaults: what the
// campaign's estimate block gives stays over them.
func (c *Campaign) SetEstimateDefaults(def EstimateParams) {
	c.Estimate = def
	if c.estimateNode != nil {
		d := &decoder{file: c.File}
		d.estimate(c.estimateNode, "estimate", &c.Estimate) // read once already: no error
	}
}

// Limits on campaign-level numbers; beyond them a file is surely a typo.
const (
	MaxRepetitions = 1000
	MaxCells       = 100000
	// MaxCampaignBytes bounds the file: the study's campaign is 1 KiB.
	MaxCampaignBytes = 1 << 20
	// MaxEstimate bounds a plan's estimated wall time: a campaign of more
	// than a year is a typo in a duration or a list.
	MaxEstimate = 366 * 24 * time.Hour
	// MaxEstimateStep bounds estimate.server-start and cell-overhead.
	MaxEstimateStep = time.Hour
	// MinPrefillRate is estimate.prefill-rate's floor, 1 MB/s.
	MinPrefillRate = lab.Size(1000 * 1000)
)

var (
	nameRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	selectorRE = regexp.MustCompile(`^[a-z][a-z0-9-]*@[0-9][0-9A-Za-z.+-]*$`)
	runtimeRE  = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	labelRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.@+-]{0,63}$`)
	memoryRE   = regexp.MustCompile(`(?i)^[0-9]+(b|k|kb|m|mb|g|gb)?$`)
	envKeyRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// LoadCampaign reads and checks a campaign file. Every error names the file,
// line and field; a file that loads will plan.
func LoadCampaign(path string) (*Campaign, error) {
	// Only a regular file of bounded size: a FIFO would block the open,
	// /dev/zero would never end.
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read campaign: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, SpecErrors{{File: path, Msg: "not a regular file; a campaign is a YAML file"}}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read campaign: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxCampaignBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read campaign %s: %w", path, err)
	}
	if len(b) > MaxCampaignBytes {
		return nil, SpecErrors{{File: path, Msg: fmt.Sprintf("larger than %d KiB; a campaign file is at most that", MaxCampaignBytes>>10)}}
	}
	return ParseCampaign(path, b)
}

// ParseCampaign checks a campaign given as bytes; file names it in errors.
func ParseCampaign(file string, src []byte) (*Campaign, error) {
	root, err := campaignDocument(file, src)
	if err != nil {
		return nil, err
	}
	d := &decoder{file: file}
	c := &Campaign{File: file, Source: src, Seed: 1, Order: OrderInterleave, Repetitions: 1,
		Calibrate: DefaultCalibration(), lines: map[string]pos{}}
	var blocks campaignBlocks
	seen := d.mapping(root, "", d.campaignFields(c, &blocks))
	if root.Kind != yaml.MappingNode {
		return nil, d.errs
	}
	for _, req := range []string{"name", "versions", "workload"} {
		if seen[req] == nil {
			d.fail(root, req, "missing; a campaign needs name, versions and workload")
		}
	}
	if c.Name != "" && !nameRE.MatchString(c.Name) {
		d.fail(valueOf(root, "name"), "name", "%q: use lower-case letters, digits, . _ - (it names the run directory)", c.Name)
	}
	if c.Provider.Kind == "" {
		c.Provider.Kind = DefaultProvider
	}
	c.Provider.file = file
	d.campaignBlocks(c, blocks)
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	// Combinations are checked by expanding: an impossible cell (threads
	// above connections, a value too small to verify) fails here, before
	// anything starts, and names the line of the field involved.
	p, err := c.cellsOf(nil)
	if err != nil {
		return nil, err
	}
	if err := c.checkClients(p); err != nil {
		return nil, err
	}
	return c, nil
}

// campaignDocument is the campaign file's one YAML document, its top
// node: a file that is empty, not YAML, holds a second document or an
// alias is refused.
func campaignDocument(file string, src []byte) (*yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, SpecErrors{{File: file, Msg: "empty campaign file"}}
		}
		return nil, SpecErrors{{File: file, Msg: "not YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, SpecErrors{{File: file, Line: extra.Line, Col: extra.Column, Msg: "a second YAML document; a campaign file holds one"}}
	}
	if a, path := noAliases(&doc, ""); a != nil {
		return nil, SpecErrors{{File: file, Line: a.Line, Col: a.Column, Field: path,
			Msg: fmt.Sprintf("alias *%s: aliases are not accepted; write the value out", a.Value)}}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	return root, nil
}

// campaignBlocks are the top-level blocks read after the scalar fields,
// since each depends on others (versions on server, the estimate on its
// defaults).
type campaignBlocks struct {
	estimate, server, versions, workload *yaml.Node
}

// campaignFields decodes each top-level field into c, keeping the blocks
// for campaignBlocks.
func (d *decoder) campaignFields(c *Campaign, b *campaignBlocks) map[string]fieldFunc {
	return map[string]fieldFunc{
		"name":        func(n *yaml.Node, p string) { d.str(n, p, &c.Name) },
		"description": func(n *yaml.Node, p string) { d.str(n, p, &c.Description) },
		"seed": func(n *yaml.Node, p string) {
			var v int64
			if d.integer(n, p, 0, 1<<62, &v) {
				c.Seed = uint64(v)
			}
		},
		"order": func(n *yaml.Node, p string) {
			var s string
			d.str(n, p, &s)
			switch Order(s) {
			case OrderInterleave, OrderShuffle:
				c.Order = Order(s)
			case "":
			default:
				d.fail(n, p, "%q: use interleave or shuffle", s)
			}
		},
		"repetitions": func(n *yaml.Node, p string) {
			var v int64
			if d.integer(n, p, 1, MaxRepetitions, &v) {
				c.Repetitions = int(v)
			}
		},
		"provider": func(n *yaml.Node, p string) { c.Provider = d.provider(n, p) },
		"tuning": func(n *yaml.Node, p string) {
			d.str(n, p, &c.Tuning)
			if c.Tuning != "" && !nameRE.MatchString(c.Tuning) {
				d.fail(n, p, "%q is not a profile name (lower-case letters, digits, . _ -)", c.Tuning)
			}
		},
		"server":   func(n *yaml.Node, p string) { b.server = n },
		"versions": func(n *yaml.Node, p string) { b.versions = n },
		"workload": func(n *yaml.Node, p string) { b.workload = n },
		"estimate": func(n *yaml.Node, p string) { b.estimate = n },
		"clients": func(n *yaml.Node, p string) {
			c.lines[p] = pos{n.Line, n.Column}
			d.clients(n, p, &c.Clients)
		},
		"calibrate": func(n *yaml.Node, p string) {
			c.lines[p] = pos{n.Line, n.Column}
			d.calibration(n, p, &c.Calibrate)
		},
	}
}

// campaignBlocks decodes the estimate, the server defaults, the versions
// over them and the workload.
func (d *decoder) campaignBlocks(c *Campaign, b campaignBlocks) {
	c.Estimate = DefaultEstimate()
	if b.estimate != nil {
		c.estimateNode = b.estimate
		d.estimate(b.estimate, "estimate", &c.Estimate)
	}
	if b.server != nil {
		d.serverSettings(b.server, "server", &c.Server, nil)
	}
	if b.versions != nil {
		c.Versions = d.versions(b.versions, "versions", c.Server)
	}
	if b.workload != nil {
		c.lines["workload"] = pos{deref(b.workload).Line, deref(b.workload).Column}
		c.Axes = d.workload(b.workload, "workload", c.lines)
	}
}

func valueOf(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return m
}

// provider reads the block's kind and keeps the rest for the provider
// table, which knows the kinds and their settings (Provider.Decode).
func (d *decoder) provider(n *yaml.Node, path string) Provider {
	n = deref(n)
	p := Provider{node: n}
	switch n.Kind {
	case yaml.ScalarNode: // provider: local
		d.str(n, path, &p.Kind)
	case yaml.MappingNode:
		p.Settings = map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "kind" {
				d.str(v, path+".kind", &p.Kind)
				continue
			}
			if _, dup := p.Settings[k.Value]; dup {
				d.fail(k, join(path, k.Value), "given twice")
				continue
			}
			p.Settings[k.Value] = plain(v)
		}
		if p.Kind == "" {
			d.fail(n, path+".kind", "missing; the provider block names its kind (such as local)")
		}
		if len(p.Settings) == 0 {
			p.Settings = nil
		}
	default:
		d.fail(n, path, "want a provider kind or a mapping with kind, got %s", kindName(n))
	}
	if p.Kind != "" && !nameRE.MatchString(p.Kind) {
		d.fail(valueOf(n, "kind"), path+".kind", "%q is not a provider kind (lower-case letters, digits, . _ -)", p.Kind)
	}
	return p
}

func (d *decoder) estimate(n *yaml.Node, path string, e *EstimateParams) {
	dur := func(out *lab.Duration) fieldFunc {
		return func(n *yaml.Node, p string) {
			if s, ok := d.scalar(n, p, "a duration such as 2s"); ok {
				var v lab.Duration
				if err := v.Set(s); err != nil || v < 0 || v.D() > MaxEstimateStep {
					d.fail(n, p, "%q: use a duration such as 500ms or 2s, at most %s", s, MaxEstimateStep)
					return
				}
				*out = v
			}
		}
	}
	d.mapping(n, path, map[string]fieldFunc{
		"server-start":  dur(&e.ServerStart),
		"cell-overhead": dur(&e.CellOverhead),
		"prefill-rate": func(n *yaml.Node, p string) {
			if s, ok := d.scalar(n, p, "bytes per second such as 1GB"); ok {
				v, err := lab.ParseSize(s)
				if err != nil || v < MinPrefillRate {
					d.fail(n, p, "%q: use bytes per second, at least 1MB, as %s", s, lab.SizeForms)
					return
				}
				e.PrefillRate = v
			}
		},
	})
}
