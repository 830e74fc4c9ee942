package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/lab/labtest"
)

// hostileCampaign is a valid netns campaign with one line swapped in, so
// the only thing wrong is the line under test and a run that got past the
// file would make namespaces the test can see.
func hostileCampaign(extra string) string {
	return "name: hostile\nprovider: netns\nversions:\n  - {binary: /usr/bin/redis-server}\nworkload:\n  ratio: GET\n  connections: 2\n" + extra
}

// aliasBomb is a billion laughs inside provider settings: nine levels of
// nine aliases, 9^9 strings if expanded.
const aliasBomb = `name: hostile
provider:
  kind: netns
  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]
  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
  g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
  h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
  i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
versions:
  - {binary: /usr/bin/redis-server}
workload:
  ratio: GET
`

// wideWorkload lists 300 keyspaces, 300 connection counts and 1000
// pipeline depths: each list is fine, the product is 9e7 cells.
func wideWorkload() string {
	var b strings.Builder
	list := func(name string, from, n int) {
		fmt.Fprintf(&b, "  %s: [", name)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprint(&b, from+i)
		}
		b.WriteString("]\n")
	}
	b.WriteString("name: hostile\nprovider: netns\nversions:\n  - {binary: /usr/bin/redis-server}\nworkload:\n  ratio: SET\n  key-size: 64\n")
	list("keyspace", 1, 300)
	list("connections", 1000, 300)
	list("pipeline", 1, 1000)
	return b.String()
}

// Every case is input an operator (or a typo) can give. Each must end in
// one line on stderr that names the flag or the campaign field (with
// file:line:col), exit 2, well inside the limit, with nothing started: no
// connection to the server, no run directory, no namespace.
func TestHostileInputIsRefused(t *testing.T) {
	t.Parallel()
	type tc struct {
		name  string
		args  []string // CAMPAIGN stands for the campaign file, RUN for the run directory, PORT for the listener's port
		file  string   // the campaign (or, for soak, the stored campaign); "" for none
		names string   // the flag or field the line must name
		at    string   // :line:col after the file's name, for campaign cases
	}
	bench := func(name, names string, args ...string) tc {
		return tc{name: "bench " + name, args: append([]string{"bench", "-h", "127.0.0.1", "-p", "PORT", "--quiet"}, args...), names: names}
	}
	campaign := func(verb, name, file, names, at string) tc {
		return tc{name: "sweep " + verb + " " + name, args: []string{"sweep", verb, "CAMPAIGN"}, file: file, names: names, at: at}
	}
	// 100000 cells of two days each: more than time.Duration holds.
	longCampaign := "repetitions: 1000\n" + hostileCampaign("  value-size: [1MiB, 2MiB, 3MiB, 4MiB, 5MiB, 6MiB, 7MiB, 8MiB, 9MiB, 10MiB]\n  pipeline: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n  warmup: 24h\n  duration: 24h\n")
	cases := []tc{
		bench("cpu-list out of memory", "--cpu-list", "--cpu-list", "0-2000000000"),
		bench("cpu-list endless", "--cpu-list", "--cpu-list", "0-9223372036854775807"),
		bench("cpu-list wraps", "--cpu-list", "--cpu-list", "9223372036854775806-9223372036854775807"),
		bench("zipf NaN", "--key-dist", "--key-dist", "zipf:NaN"),
		bench("zipf Inf", "--key-dist", "--key-dist", "zipf:Inf"),
		bench("zipf 0", "--key-dist", "--key-dist", "zipf:0"),
		bench("gaussian sd NaN", "--key-dist", "--key-dist", "gaussian:0.5,NaN"),
		bench("gaussian mean outside", "--key-dist", "--key-dist", "gaussian:1e300,0.1"),
		bench("ratio overflow", "--ratio", "-r", "9223372036854775807:1"),
		bench("percentiles NaN", "--percentiles", "--percentiles", "NaN"),
		bench("percentiles past 100", "--percentiles", "--percentiles", "1e309"),
		bench("percentiles too many", "--percentiles", "--percentiles", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"),
		bench("threads", "-t/--threads", "-t", "2000", "-c", "2000"),
		bench("connections", "-c/--connections", "-c", "1000000"),
		bench("in flight", "-P/--pipeline", "-c", "16384", "-P", "1024"),
		bench("keyspace above 2^32", "-n/--keyspace", "-n", "5000000000", "--key-size", "20"),
		bench("duration", "-d/--duration", "-d", "2000000h"),
		bench("warmup", "--warmup", "--warmup", "2000000h"),
		bench("request timeout", "--request-timeout", "--request-timeout", "2000000h"),
		bench("series memory", "-d/--duration", "-t", "1024", "-c", "1024", "-d", "24h"),
		bench("ceiling endless file", "--ceiling", "--ceiling", "/dev/zero"),
		bench("rate NaN", "--rate", "--rate", "NaN"),
		bench("rate past the bound", "--rate", "--rate", "99999999999"),
		bench("rate of bytes", "--rate", "--rate", "20GBps"),
		bench("ramp of a billion steps", "--ramp", "--ramp", "1:2:1000000000:1s"),
		bench("ramp of endless steps", "--ramp", "--ramp", "1:2:1000:24h"),
		bench("ramp and rate", "--ramp", "--ramp", "1:2:2:1s", "--rate", "5"),
		bench("arrival", "--arrival", "--arrival", "bursty", "--rate", "5"),
		bench("queue limit", "--queue-limit", "--queue-limit", "2000000h", "--rate", "5"),
		bench("probe rate", "--probe", "--probe", "100B@1e400"),
		bench("probe size", "--probe", "--probe", "5GiB@1"),
		bench("mix of many sizes", "--value-size", "-s", strings.Repeat("1MiB:1,", 5000)+"2MiB:1"),
		bench("mix of an endless range", "--value-size", "-s", "1B-9223372036854775807B"),
		bench("mix weight overflow", "--value-size", "-s", "1MiB:9223372036854775807,2MiB:1"),
		bench("start-at past int64", "--start-at", "--start-at", "99999999999999999999"),
		bench("start-at a year away", "--start-at", "--start-at", "2000000000000000000"),

		{name: "sink value size", args: []string{"sink", "-p", "0", "-s", "1000GB"}, names: "-s, --value-size"},
		{name: "sink keyspace", args: []string{"sink", "-p", "0", "-n", "5000000000"}, names: "-n/--keyspace"},
		{name: "sink delay", args: []string{"sink", "-p", "0", "--delay", "2000000h"}, names: "--delay"},
		{name: "sink mix", args: []string{"sink", "-p", "0", "-s", "1B-5GiB"}, names: "--value-size"},

		campaign("plan", "cpu-list out of memory", hostileCampaign("  cpu-list: 0-2000000000\n"), "workload.cpu-list", ":8:13"),
		campaign("plan", "server cpus endless", strings.Replace(hostileCampaign(""), "versions:", "server: {cpus: 0-9223372036854775807}\nversions:", 1), "server.cpus", ":3:16"),
		campaign("plan", "persistence unknown", strings.Replace(hostileCampaign(""), "versions:", "server: {persistence: \"aof-always; rm -rf /\"}\nversions:", 1), "server.persistence", ":3:23"),
		campaign("plan", "persistence twice", strings.Replace(hostileCampaign(""), "versions:", "server: {persistence: rdb, args: [--save, \"1 1\"]}\nversions:", 1), "server.args", ":3:34"),
		campaign("plan", "tls not a bool", strings.Replace(hostileCampaign(""), "versions:", "server: {tls: 1e309}\nversions:", 1), "server.tls", ":3:15"),
		campaign("run", "persistence unknown", strings.Replace(hostileCampaign(""), "versions:", "server: {persistence: 1e309}\nversions:", 1), "server.persistence", ":3:23"),
		campaign("plan", "zipf NaN", hostileCampaign("  key-dist: zipf:NaN\n"), "workload.key-dist", ":8:13"),
		campaign("plan", "zipf Inf", hostileCampaign("  key-dist: zipf:Inf\n"), "workload.key-dist", ":8:13"),
		campaign("plan", "gaussian without sd", hostileCampaign("  key-dist: gaussian:0.5\n"), "workload.key-dist", ":8:13"),
		campaign("plan", "ratio overflow", strings.Replace(hostileCampaign(""), "ratio: GET", `ratio: "9223372036854775807:1"`, 1), "workload.ratio", ":6:10"),
		campaign("plan", "alias bomb in provider", aliasBomb, "provider.b[0]", ":5:10"),
		campaign("plan", "threads", hostileCampaign("  threads: 20000\n"), "workload.threads", ":8:12"),
		campaign("plan", "keyspace above 2^32", hostileCampaign("  keyspace: 5000000000\n  key-size: 20\n"), "workload.keyspace", ":8:13"),
		campaign("plan", "estimate overflows", longCampaign, "workload", ":7:3"),
		campaign("plan", "prefill product", hostileCampaign("  keyspace: 1073741824\n  key-size: 20\n  value-size: 4GiB\nestimate: {prefill-rate: 1MB}\n"), "workload", ":6:3"),
		campaign("plan", "server start", hostileCampaign("estimate: {server-start: 2000000h}\n"), "estimate.server-start", ":8:26"),
		campaign("plan", "cross product", wideWorkload(), "workload", ":6:3"),
		campaign("plan", "rate NaN", hostileCampaign("  rate: NaN\n"), "workload.rate", ":8:9"),
		campaign("plan", "ramp of endless steps", hostileCampaign("  ramp: 1:2:1000:24h\n"), "workload.ramp", ":8:9"),
		campaign("plan", "ramp beside a window", hostileCampaign("  ramp: 1:2:2:1s\n  duration: 5s\n"), "workload.duration", ":9:13"),
		campaign("plan", "probe rate", hostileCampaign("  probe: 100B@1e400\n"), "workload.probe", ":8:10"),
		campaign("plan", "mix of an endless range", hostileCampaign("  value-size: 1B-5GiB\n"), "workload.value-size", ":8:15"),
		{name: "sweep plan endless file", args: []string{"sweep", "plan", "/dev/zero"}, names: "/dev/zero"},
		campaign("plan", "clients past the bound", "clients: 1000\n"+hostileCampaign(""), "clients", ":1:10"),
		campaign("plan", "clients more than connections", "clients: 16\n"+hostileCampaign(""), "workload.connections", ":8:16"),
		campaign("plan", "calibrate duration", "calibrate: {duration: 2000000h}\n"+hostileCampaign(""), "calibrate.duration", ":1:23"),
		campaign("plan", "calibrate value size", "calibrate: {value-size: 9223372036854775807}\n"+hostileCampaign(""), "calibrate.value-size", ":1:25"),
		campaign("run", "clients past the bound", "clients: 1000\n"+hostileCampaign(""), "clients", ":1:10"),
		{name: "link duration", args: []string{"link", "CAMPAIGN", "--duration", "2000000h"}, file: hostileCampaign(""), names: "--duration"},
		{name: "link connections", args: []string{"link", "CAMPAIGN", "--connections", "9223372036854775807"}, file: hostileCampaign(""), names: "--connections"},
		{name: "link value size", args: []string{"link", "CAMPAIGN", "--value-size", "9223372036854775807"}, file: hostileCampaign(""), names: "--value-size"},
		{name: "link alias bomb", args: []string{"link", "CAMPAIGN"}, file: aliasBomb, names: "provider.b[0]", at: ":5:10"},
		{name: "link clients past the bound", args: []string{"link", "CAMPAIGN"}, file: "clients: 1000\n" + hostileCampaign(""), names: "clients", at: ":1:10"},

		campaign("run", "cpu-list out of memory", hostileCampaign("  cpu-list: 0-2000000000\n"), "workload.cpu-list", ":8:13"),
		campaign("run", "alias bomb in provider", aliasBomb, "provider.b[0]", ":5:10"),
		campaign("run", "ratio overflow", strings.Replace(hostileCampaign(""), "ratio: GET", `ratio: "9223372036854775807:1"`, 1), "workload.ratio", ":6:10"),
		campaign("run", "estimate overflows", longCampaign, "workload", ":7:3"),
		{name: "sweep run link-gbps NaN", args: []string{"sweep", "run", "CAMPAIGN", "--link-gbps", "NaN"}, file: hostileCampaign(""), names: "--link-gbps"},
		{name: "sweep run max-attempts", args: []string{"sweep", "run", "CAMPAIGN", "--max-attempts", "9223372036854775807"}, file: hostileCampaign(""), names: "--max-attempts"},

		{name: "soak no such cell", args: []string{"soak", "RUN", "--cell", "valkey-9.9.9/GET/1MiB/r1", "--duration", "10s"}, file: hostileCampaign(""), names: "--cell"},
		{name: "soak no run directory", args: []string{"soak", "RUN/missing", "--cell", "x/GET/1MiB/r1"}, file: hostileCampaign(""), names: "RUN"},
		{name: "soak duration", args: []string{"soak", "RUN", "--cell", "x/GET/1MiB/r1", "--duration", "2000000h"}, file: hostileCampaign(""), names: "--duration"},
		{name: "soak alias bomb in the stored campaign", args: []string{"soak", "RUN", "--cell", "x/GET/1MiB/r1"}, file: aliasBomb, names: "provider.b[0]", at: ":5:10"},
	}
	bin := labtest.Binary(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			// A server that must never be spoken to.
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			run := filepath.Join(work, "runs", "hostile")
			cfile := filepath.Join(work, "c.yaml")
			if c.file != "" {
				if err := os.WriteFile(cfile, []byte(c.file), 0o644); err != nil {
					t.Fatal(err)
				}
				// A run directory as sweep run leaves it, holding the
				// campaign and one cell, x/GET/1MiB/r1.
				if err := os.MkdirAll(filepath.Join(run, "cells"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(run, "campaign.yaml"), []byte(c.file), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(run, "cells", "x_GET_1MiB_r1.json"), []byte(`{"cell_id": "x/GET/1MiB/r1"}`), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := tree(t, work)
			args := make([]string, len(c.args))
			port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
			for i, a := range c.args {
				a = strings.ReplaceAll(a, "CAMPAIGN", cfile)
				a = strings.ReplaceAll(a, "RUN", run)
				args[i] = strings.ReplaceAll(a, "PORT", port)
			}
			names := strings.ReplaceAll(c.names, "RUN", run)

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			// A 4 GiB address space: a regression that allocates without
			// bound dies here instead of taking the shared machine with it.
			cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `ulimit -v 4194304 && exec "$0" "$@"`, bin}, args...)...)
			cmd.Dir = work
			cmd.WaitDelay = time.Second
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err = cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("still running after 5s; stderr so far:\n%.2000s", stderr.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Errorf("exit %v, want 2", err)
			}
			msg := strings.TrimSuffix(stderr.String(), "\n")
			if msg == "" || strings.Contains(msg, "\n") {
				t.Fatalf("want one line on stderr, got (%v):\n%.2000s", err, stderr.String())
			}
			if !strings.Contains(msg, names) {
				t.Errorf("stderr does not name %s: %s", names, msg)
			}
			if c.at != "" {
				where := cfile // soak reads the campaign stored in the run
				if c.args[0] == "soak" {
					where = filepath.Join(run, "campaign.yaml")
				}
				if !strings.Contains(msg, where+c.at+": ") {
					t.Errorf("stderr does not locate the fault at %s%s: %s", where, c.at, msg)
				}
			}
			if after := tree(t, work); after != before {
				t.Errorf("files were made:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if ns, _ := filepath.Glob(filepath.Join(netns.RunDir, fmt.Sprintf("%s%d-*", netns.Prefix, cmd.Process.Pid))); len(ns) > 0 {
				t.Errorf("namespaces were made: %v", ns)
			}
			l.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Millisecond))
			if conn, err := l.Accept(); err == nil {
				conn.Close()
				t.Errorf("the server was connected to")
			}
		})
	}
}

// tree lists every path under dir, so a test can see that nothing was made.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
