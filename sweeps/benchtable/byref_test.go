package benchtable

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
)

// oldSinkCommit is the sink as it was before the link calibration work,
// the reference the sink must stay above with many flows.
const oldSinkCommit = "15fd4ee"

// oldSinkStoredGbps is that sink's median Gbit/s, GET 8 MiB, 8
// connections, 2 threads, on loopback, alternated with today's over 3
// rounds of 3 (2026-12-05, a 2-vCPU VM shared with four other agents):
// the row's reference when the commit cannot be built here.
const oldSinkStoredGbps = 40.9

// BenchmarkOldSink: today's sink against the sink of oldSinkCommit, built
// on the fly (git archive, go build), both serving GET 8 MiB to the same
// bench, 8 connections, alternated.
func BenchmarkOldSink(b *testing.B) {
	results.guard(b, secCeiling, "sink ceiling vs iperf3")
	bin := labtest.Binary(b)
	sink := labtest.StartSink(b, bin, nil, "-s", "8MiB")
	old, why := buildOldSink(b)
	var lr, or []float64
	var ns []string
	if old == "" {
		stored := fmt.Sprintf("the sink of %s is a stored figure (not built: %s)", oldSinkCommit, why)
		for i := 0; i < rounds; i++ {
			g, err := sinkGbps(b, bin, sink.Port, 8)
			lr, or, ns = append(lr, g), append(or, oldSinkStoredGbps), append(ns, errNote(err), stored)
		}
	} else {
		oldSink := labtest.StartSink(b, old, nil, "-s", "8MiB")
		alternate(rounds, func() {
			g, err := sinkGbps(b, bin, sink.Port, 8)
			lr, ns = append(lr, g), append(ns, errNote(err))
		}, func() {
			g, err := sinkGbps(b, bin, oldSink.Port, 8)
			or, ns = append(or, g), append(ns, errNote(err))
		})
	}
	results.add(secCeiling, compare("sink ceiling GET 8MiB, 8 conns vs the sink of "+oldSinkCommit, "Gbps", "Gbps", lr, or, atLeastX(1.0), ns...))
}

// buildOldSink builds linerate at oldSinkCommit into a temporary
// directory: its path, or "" and why not.
func buildOldSink(b *testing.B) (string, string) {
	dir := b.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	archive := exec.CommandContext(ctx, "sh", "-c", "git archive "+oldSinkCommit+" | tar -x -C "+dir)
	archive.Dir = "../.." // the repository's root: in a subdirectory git archives only that
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("git archive: %v %s", err, lastLine(string(out)))
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "linerate"), "./cmd/linerate")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("go build: %v %s", err, lastLine(string(out)))
	}
	return filepath.Join(dir, "linerate"), ""
}

// BenchmarkSetVersusIperfZerocopy: linerate SET 8 MiB against the sink
// (bodies sent as --send auto picks for loopback, copied a request a
// call; payloads dropped in the kernel) beside iperf3 -Z (sendfile)
// client to server, 8 flows each: the sender's CPU-s per GB.
func BenchmarkSetVersusIperfZerocopy(b *testing.B) {
	results.guard(b, secPeer, "linerate vs the peer benchmark")
	bin := labtest.Binary(b)
	iperf := iperf3Binary(b)
	sink := labtest.StartSink(b, bin, nil, "-s", "8MiB")
	var lr, ip []float64
	var ns []string
	send := ""
	alternate(rounds, func() {
		r, _, err := benchCLI(b, bin, ceilingWarmup+ceilingWindow, "-p", strconv.Itoa(sink.Port), "-c", "8", "-t", "2",
			"-s", "8MiB", "-r", "0:100", "--warmup", ceilingWarmup.String(), "-d", ceilingWindow.String())
		v := math.NaN()
		switch {
		case err != nil:
		case r.Ops[lab.OpSet] == nil || r.Ops[lab.OpSet].Ops == 0:
			err = fmt.Errorf("linerate completed no SET against the sink")
		default:
			v, send = r.Client.CPUSecPerGB, r.Engine.Send
		}
		lr, ns = append(lr, v), append(ns, errNote(err))
	}, func() {
		v, err := iperf3SenderCPU(iperf, labtest.FreePort(b), 8, ceilingWindow)
		ip, ns = append(ip, orNaN(v, err)), append(ns, errNote(err))
	})
	results.add(secPeer, compare("SET 8MiB sender CPU-s/GB (engine.send "+send+") vs iperf3 -Z -P 8", "CPU-s/GB", "CPU-s/GB", lr, ip, atMostX(1.2), ns...))
}

// iperf3SenderCPU runs iperf3 -Z (the client sends with sendfile) over
// loopback and returns the client's CPU seconds per GB sent.
func iperf3SenderCPU(iperf string, port, flows int, d time.Duration) (float64, error) {
	out, err := iperf3Test(iperf, here, here, "127.0.0.1", port, d, "-Z", "-N", "-O", "1", "-P", strconv.Itoa(flows))
	if err != nil {
		return 0, err
	}
	var r struct {
		End struct {
			SumSent struct {
				Seconds float64 `json:"seconds"`
				Bytes   float64 `json:"bytes"`
			} `json:"sum_sent"`
			CPU struct {
				HostTotal float64 `json:"host_total"`
			} `json:"cpu_utilization_percent"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.End.SumSent.Bytes <= 0 {
		return 0, fmt.Errorf("iperf3 -Z: no bytes in %.300s", strings.TrimSpace(string(out)))
	}
	cpu := r.End.CPU.HostTotal / 100 * r.End.SumSent.Seconds
	return cpu / (r.End.SumSent.Bytes / 1e9), nil
}
