// Package export flattens a sweeps run directory into rows where people
// already look: CSV for spreadsheets, NDJSON for pandas, DuckDB or jq. One
// row per cell and operation (the campaign, the version, every workload
// field, the outcome, throughput, latency percentiles in ms, client and
// server CPU), or, with Series, one per cell, operation and second of the
// measured window. Failed cells are rows with status failed and empty
// figures; numbers are numbers (durations in seconds), never "1m0s".
package export

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
)

// Format is how rows are written.
type Format string

const (
	CSV    Format = "csv"    // a header line, then one line per row
	NDJSON Format = "ndjson" // one JSON object per line, keys in column order
)

// ParseFormat reads csv or ndjson.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case CSV, NDJSON:
		return f, nil
	}
	return "", fmt.Errorf("%q: use csv or ndjson", s)
}

// Options choose the rows and how they are written. Without Series,
// Steps or Sizes (at most one may be set) a row is a cell and op. Failed
// cells have no rows in the other views.
type Options struct {
	Format Format
	// Series writes one row per cell, op and second of the measured
	// window.
	Series bool
	// Steps writes one row per cell and step of a --ramp; cells without
	// a ramp have none.
	Steps bool
	// Sizes writes one row per cell, op and size class of a value-size
	// mix; cells of one size have none.
	Sizes bool
}

// OneView says at most one of Series, Steps and Sizes is set.
func (o Options) OneView() bool {
	n := 0
	for _, v := range []bool{o.Series, o.Steps, o.Sizes} {
		if v {
			n++
		}
	}
	return n <= 1
}

// Columns lists the fields of every row of the view opt asks for, in
// order.
func Columns(opt Options) []Column {
	var out []Column
	for _, c := range columnsOf(opt) {
		out = append(out, c.Column)
	}
	return out
}

func columnsOf(opt Options) []column {
	var tail []column
	switch {
	case opt.Series:
		tail = concat(seriesColumns, pacedSeriesColumns)
	case opt.Steps:
		tail = concat(stepColumns, judgedStepColumns)
	case opt.Sizes:
		tail = concat(sizeColumns, judgedSizeColumns)
	default:
		tail = concat(cellColumns, pacedCellColumns, judgedCellColumns)
	}
	return concat(prefixColumns, pacedWorkloadColumns, registryColumns(prefixColumns, pacedWorkloadColumns), tail)
}

// InputError is a run directory Write cannot make rows from (nothing was
// written); any other error is the output's.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Write writes the run's cells of its current plan (all of them when it
// has no plan), in plan order, each op of a cell's mix in record order. A
// record of a layout this linerate does not read is an error naming its
// file; the run's unreadable files (run.Problems) are the caller's to
// report.
func Write(out io.Writer, run *sweeps.Run, opt Options) error {
	if _, err := ParseFormat(string(opt.Format)); err != nil {
		return &InputError{fmt.Errorf("export format %w", err)}
	}
	if !opt.OneView() {
		return &InputError{fmt.Errorf("export: series, steps and sizes are views of their own; ask for one")}
	}
	cells := run.Current()
	if len(cells) == 0 {
		return &InputError{fmt.Errorf("export %s: no cell records in %s/; is this a run directory (linerate sweep run writes one)?",
			run.Dir, filepath.Join(run.Dir, sweeps.CellsDir))}
	}
	for _, c := range cells {
		if c.Result != nil && !lab.ReadsSchema(c.Result.Schema) {
			return &InputError{fmt.Errorf("export %s: record layout %q is not one this linerate reads (%s or %s); use the linerate that wrote it",
				filepath.Join(run.Dir, sweeps.CellsDir, sweeps.CellFileName(c.CellID)), c.Result.Schema, lab.SchemaV1, lab.SchemaVersion)}
		}
	}
	cols := columnsOf(opt)
	bw := bufio.NewWriter(out)
	rw := newRowWriter(bw, opt.Format, cols)
	if err := rw.header(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	for _, c := range cells {
		for _, r := range rowsOf(c, run.Env, opt) {
			if err := rw.row(&r); err != nil {
				return fmt.Errorf("export %s: %w", c.CellID, err)
			}
		}
	}
	if err := rw.flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// rowsOf is a cell's rows: one per op of its mix, or one per op and
// second, per ramp step, or per op and size class.
func rowsOf(c *sweeps.CellRecord, env *sweeps.Environment, opt Options) []row {
	w := c.Workload
	if c.Result != nil {
		w = c.Result.Workload
	}
	ops := w.Ops()
	if opt.Steps {
		if c.Status != sweeps.StatusDone || c.Result == nil {
			return nil
		}
		r := row{rec: c, w: w, env: env}
		if len(ops) == 1 {
			r.op = ops[0]
		}
		var rows []row
		for i := range c.Result.Steps {
			s := r
			s.step = &c.Result.Steps[i]
			rows = append(rows, s)
		}
		return rows
	}
	var rows []row
	for _, op := range ops {
		r := row{rec: c, w: w, op: op, env: env}
		if c.Status == sweeps.StatusDone && c.Result != nil {
			r.o = c.Result.Ops[op]
		}
		switch {
		case opt.Series && r.o != nil:
			for i := range r.o.Series {
				s := r
				s.sec = &r.o.Series[i]
				rows = append(rows, s)
			}
		case opt.Sizes && r.o != nil:
			for i := range r.o.Sizes {
				s := r
				s.size = &r.o.Sizes[i]
				rows = append(rows, s)
			}
		case !opt.Series && !opt.Sizes:
			rows = append(rows, r)
		}
	}
	return rows
}

type rowWriter struct {
	format Format
	cols   []column
	out    *bufio.Writer
	csv    *csv.Writer
	fields []string
	buf    bytes.Buffer
}

func newRowWriter(out *bufio.Writer, f Format, cols []column) *rowWriter {
	rw := &rowWriter{format: f, cols: cols, out: out, fields: make([]string, len(cols))}
	if f == CSV {
		rw.csv = csv.NewWriter(out)
	}
	return rw
}

func (rw *rowWriter) header() error {
	if rw.format != CSV {
		return nil
	}
	for i, c := range rw.cols {
		rw.fields[i] = c.Name
	}
	return rw.csv.Write(rw.fields)
}

func (rw *rowWriter) row(r *row) error {
	if rw.format == CSV {
		for i, c := range rw.cols {
			rw.fields[i] = csvValue(c.get(r))
		}
		return rw.csv.Write(rw.fields)
	}
	rw.out.WriteByte('{')
	for i, c := range rw.cols {
		if i > 0 {
			rw.out.WriteByte(',')
		}
		k, _ := json.Marshal(c.Name)
		rw.out.Write(k)
		rw.out.WriteByte(':')
		v, err := jsonValue(&rw.buf, c.get(r))
		if err != nil {
			return fmt.Errorf("column %s: %w", c.Name, err)
		}
		rw.out.Write(v)
	}
	_, err := rw.out.WriteString("}\n")
	return err
}

func (rw *rowWriter) flush() error {
	if rw.csv == nil {
		return nil
	}
	rw.csv.Flush()
	return rw.csv.Error()
}

// finite turns NaN and infinities (no figure) into nil: JSON has no word
// for them and a spreadsheet would take them for text.
func finite(v any) any {
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return nil
	}
	return v
}

func csvValue(v any) string {
	switch x := finite(v).(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v) // no getter returns another type (TestColumnKinds)
}

// jsonValue is v as JSON, text as it is (no \u003c for "<").
func jsonValue(buf *bytes.Buffer, v any) ([]byte, error) {
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(finite(v)); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
