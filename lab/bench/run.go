// Package bench is one bench on this host, as `linerate bench` runs it
// once its flags are read (Run), or a campaign's runner in this process
// (Bencher): the engine, the record finished (percentiles, ceiling notes)
// and written with its HdrHistogram files, and the live lines a
// coordinator reads back from a bench on another host. It knows the
// schema and the engine, nothing of campaigns or hosts.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/atomicfile"
	"github.com/linerate/linerate/lab/engine"
	"github.com/linerate/linerate/lab/exitcode"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/lab/hdrfile"
	"github.com/linerate/linerate/lab/report"
)

// BenchRun is `linerate bench` once its flags are read: wait for the start
// time, run the engine in this process, finish the record (percentiles,
// ceiling notes) and write it where asked. Its fields are the flags'.
type BenchRun struct {
	Workload lab.Workload
	// Engine's Given, Progress, Live and MemAvailable (the caller's
	// reader of this host's free memory: infra/kernel's, from cmd).
	Engine      engine.Options
	StartAt     string // Unix nanoseconds on this host's clock; "": at once
	Ceiling     string // a record of a run against linerate sink
	HgrmDir     string // where the HdrHistogram files go; "": none
	JSON        string // the record's file, "-" for Stdout; "": none
	Percentiles lab.Percentiles
	// Stdout gets the summary, or the record when JSON is "-" (the
	// summary then goes to Stderr).
	Stdout, Stderr io.Writer

	start time.Time
	sink  *lab.Result
}

// Check reads what the flags name before anything runs; an error is the
// operator's (exit 2), one line naming the flag.
func (b *BenchRun) Check(now time.Time) error {
	var err error
	if b.StartAt != "" {
		if b.start, err = fields.ParseStartAt(b.StartAt, now); err != nil {
			return err
		}
	}
	if b.Ceiling != "" {
		if b.sink, err = lab.ReadResult(b.Ceiling); err == nil && !b.sink.FromSink() {
			err = fmt.Errorf("%s is a record of a run against %s, not against linerate sink", b.Ceiling, b.sink.ServerLabel())
		}
		if err != nil {
			return fmt.Errorf("--ceiling: %w", err)
		}
	}
	if b.HgrmDir != "" {
		if err := os.MkdirAll(b.HgrmDir, 0o755); err != nil {
			return fmt.Errorf("--hgrm-dir: %w", err)
		}
	}
	return nil
}

// Run waits, runs and writes. code is the exit code (lab/exitcode: the
// record's own, or that of what stopped it first), err the line to say,
// if any. The record is written in every case past the wait.
func (b *BenchRun) Run(ctx context.Context) (code int, err error) {
	if err := lab.WaitUntil(ctx, b.start); err != nil {
		return exitcode.Interrupted, errors.New("interrupted while waiting for --start-at")
	}
	res, err := engine.Run(ctx, b.Workload, b.Engine)
	if res == nil {
		if errors.As(err, new(*fields.FieldError)) {
			return exitcode.Usage, err
		}
		return exitcode.SetupFailed, err
	}
	if aerr := res.AddPercentiles(b.Percentiles); aerr != nil {
		res.Notes = append(res.Notes, "percentiles: "+aerr.Error())
	}
	if b.sink != nil {
		res.Notes = append(res.Notes, report.CeilingNotes(res, b.sink)...)
	}
	summary := b.Stdout
	if b.JSON == "-" {
		summary = b.Stderr
	}
	if res.Stop.Reason != lab.StopSetupFailed {
		report.WriteSummary(summary, res, b.Percentiles)
	}
	if b.JSON != "" {
		if werr := b.writeRecord(res); werr != nil {
			return exitcode.Errors, fmt.Errorf("write record: %w", werr)
		}
	}
	if b.HgrmDir != "" {
		paths, werr := hdrfile.WriteFiles(b.HgrmDir, res.RunID, res)
		if werr != nil {
			return exitcode.Errors, fmt.Errorf("--hgrm-dir: %w", werr)
		}
		if len(paths) > 0 {
			fmt.Fprintf(summary, "hdr       %s\n", strings.Join(paths, " "))
		}
	}
	return res.Stop.ExitCode, err
}

// writeRecord writes the record to its file atomically (temp file, fsync,
// rename), or to Stdout for "-".
func (b *BenchRun) writeRecord(res *lab.Result) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if b.JSON == "-" {
		_, err = b.Stdout.Write(data)
		return err
	}
	return atomicfile.Write(b.JSON, data)
}
