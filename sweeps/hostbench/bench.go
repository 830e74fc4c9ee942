// Package hostbench runs a cell's load as `linerate bench` on the client
// hosts of a pair, as the design has it (the coordinator never measures):
// HostBencher on one host, HostsBencher on several at one moment, their
// records merged. It reads the bench's record from its stdout and its live
// lines (lab/bench) from its stderr.
package hostbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/bench"
	"github.com/linerate/linerate/lab/fields"
)

// HostBencher runs each cell's load as `linerate bench --json -` on the
// client host of a provider's pair (a network namespace, an SSH host), as
// the design has it: the coordinator never measures.
type HostBencher struct {
	Host infra.Host
	// Live, when set, gets the remote bench's running totals as it goes
	// (bench --live-json, read back from its stderr).
	Live func(*lab.Live)
	// Args are more bench flags (--start-at).
	Args []string
}

// Bench implements sweeps.Bencher. It gives no window marks: the runner
// cuts its periodic host snapshots to the window the record reports.
func (b HostBencher) Bench(ctx context.Context, w lab.Workload, _ func(lab.Phase)) (*lab.Result, error) {
	bin, err := b.Host.Linerate(ctx)
	if err != nil {
		return nil, fmt.Errorf("linerate on %s: %w", b.Host.Name(), err)
	}
	if w.TLS.CACert != "" {
		ca, done, err := shipCA(ctx, b.Host, w.TLS.CACert)
		if err != nil {
			return nil, err
		}
		defer done()
		w.TLS.CACert = ca
	}
	argv := append(append([]string{bin, "bench", "--quiet", "--json", "-"}, fields.Args(w)...), b.Args...)
	var out, errb bytes.Buffer
	var stderr io.Writer = &errb
	if b.Live != nil {
		argv = append(argv, "--live-json")
		stderr = bench.SplitLive(b.Live, &errb)
	}
	// A bound even when the connection dies silently: the window, plus
	// room for the prefill and the drain (each request has its own
	// timeout, so a stuck server ends the bench well before this).
	cmd := infra.Command{Argv: argv, Stdout: &out, Stderr: stderr,
		Timeout: time.Duration(w.Warmup) + time.Duration(w.Duration) + 10*time.Minute}
	if w.Password != "" {
		cmd.Env = []string{fields.PasswordEnv + "=" + w.Password}
	}
	runErr := b.Host.Exec(ctx, cmd)
	// A failed run still writes its record; the exit code only says how
	// it ended, and the record says the same.
	var res lab.Result
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			return nil, fmt.Errorf("bench on %s: record is not JSON (%v); stderr: %s", b.Host.Name(), err, infra.LastLine(errb.String()))
		}
		if runErr != nil {
			return &res, fmt.Errorf("bench on %s: %s", b.Host.Name(), res.Stop.Error)
		}
		return &res, nil
	}
	if runErr == nil {
		runErr = errors.New("no record")
	}
	return nil, fmt.Errorf("bench on %s: %w; stderr: %s", b.Host.Name(), runErr, infra.LastLine(errb.String()))
}

// shipCA puts the run's CA certificate where the bench on h can read it
// and returns that path and what removes it again. A network namespace
// shares this machine's files: the path is already good there.
func shipCA(ctx context.Context, h infra.Host, local string) (string, func(), error) {
	if infra.FilesHere(h) {
		return local, func() {}, nil
	}
	remote := fmt.Sprintf("/tmp/linerate-ca-%d-%d.crt", os.Getpid(), time.Now().UnixNano())
	if err := h.Put(ctx, local, remote, 0o644); err != nil {
		return "", nil, fmt.Errorf("copy the run's CA to %s: %w", h.Name(), err)
	}
	return remote, func() {
		_ = h.Exec(context.WithoutCancel(ctx), infra.Command{Argv: []string{"rm", "-f", remote}, Timeout: 30 * time.Second})
	}, nil
}
