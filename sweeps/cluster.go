package sweeps

import (
	"fmt"
	"slices"
	"strings"
)

// A version with server.cluster: N runs every cell against a cluster of N
// nodes with the bench's --cluster (lab.Workload.Cluster): each cell is
// checked here as the bench will check it, and against N, before anything
// starts.

// checkClusterCells holds every workload cell against every cluster size
// the versions ask for: the bench's own --cluster bounds (raw engine, no
// probe, key-size room for the hash tag), a key for each node and a
// connection to each node from every client host. One error per distinct
// problem, at the workload field's line.
func (c *Campaign) checkClusterCells(wcs []workloadCell) SpecErrors {
	var errs SpecErrors
	seen := map[string]bool{}
	add := func(field, msg string, wc workloadCell) {
		if seen[field+msg] {
			return
		}
		seen[field+msg] = true
		at, ok := c.lines["workload."+field]
		if !ok {
			at = c.lines["workload"]
		}
		errs = append(errs, &SpecError{File: c.File, Line: at.line, Col: at.col, Field: "workload." + field,
			Msg: fmt.Sprintf("%s (in the cell with %s)", msg, cellVals(wc))})
	}
	fieldOf := map[int]string{}
	var sizes []int
	for _, v := range c.Versions {
		if n := v.Server.Cluster; n > 0 && fieldOf[n] == "" {
			fieldOf[n] = v.Server.clusterField
			sizes = append(sizes, n)
		}
	}
	slices.Sort(sizes)
	for _, n := range sizes {
		field := fieldOf[n]
		for _, wc := range wcs {
			cw := wc
			cw.w.Cluster = true
			if err := c.validateWorkload(cw); err != nil {
				se := err.(*SpecError)
				msg, _, _ := strings.Cut(se.Msg, " (in the cell")
				f := strings.TrimPrefix(se.Field, "workload.")
				if f == "cluster" { // the bench's --cluster bound: name the field it is about
					for _, about := range []string{"key-size", "engine", "probe"} {
						if strings.Contains(msg, about) {
							f = about
							break
						}
					}
				}
				add(f, msg+" ("+field+" runs the bench with --cluster)", wc)
				continue
			}
			w := wc.w.Resolve()
			if hosts := c.ClientCount(); w.Connections < n*hosts {
				add("connections", fmt.Sprintf("%d connections for a cluster of %d nodes (%s) from %d client host(s): each host needs one to every node; use %d or more",
					w.Connections, n, field, hosts, n*hosts), wc)
			}
			if w.Keyspace < n {
				add("keyspace", fmt.Sprintf("%d keys for a cluster of %d nodes (%s): every node needs one; use %d or more", w.Keyspace, n, field, n), wc)
			}
		}
	}
	return errs
}

// cellVals names a workload cell by its varying values.
func cellVals(wc workloadCell) string {
	vals := make([]string, 0, len(wc.vals))
	for _, def := range axisDefs {
		if v, ok := wc.vals[def.name]; ok {
			vals = append(vals, def.name+"="+v)
		}
	}
	return strings.Join(vals, " ")
}
