package nicstats

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWatched(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		// ENA
		{"bw_in_allowance_exceeded", true},
		{"pps_allowance_exceeded", true},
		{"linklocal_allowance_exceeded", true},
		{"conntrack_allowance_available", false}, // a gauge
		{"tx_timeout", true},
		{"queue_3_tx_dma_mapping_err", true},
		{"queue_3_rx_xdp_drop", true},
		{"queue_3_tx_unmask_interrupt", false}, // "err" inside interrupt
		{"queue_3_tx_cnt", false},
		{"queue_0_rx_page_alloc_fail", false}, // trouble, but not a word the issue names
		// veth, virtio_net
		{"peer_ifindex", false},
		{"rx_queue_0_drops", true},
		{"rx_queue_0_xdp_packets", false},
		{"tx_queue_0_xdp_xmit_errors", true},
		{"rx0_drops", true},
		{"tx_tx_timeouts", true},
		{"rx_kicks", false},
		// others
		{"rx_discards_phy", true},
		{"RX_CRC_ERRORS", true},
		{"ierrors", true},
		{"rxerr", true},
		{"tx_deferred_ok", false}, // "err" inside deferred
	} {
		if got := Watched(c.name); got != c.want {
			t.Errorf("Watched(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}

// KeepWatched keeps exactly the counters Watched names, values and all.
func TestKeepWatched(t *testing.T) {
	c := Counters{"rx_queue_0_drops": 3, "tx_timeout": 0, "rx_kicks": 9, "queue_3_tx_unmask_interrupt": 7}
	got := KeepWatched(c)
	if len(got) != 2 || got["rx_queue_0_drops"] != 3 || got["tx_timeout"] != 0 || len(c) != 4 {
		t.Fatalf("KeepWatched(%v) = %v", c, got)
	}
	if _, ok := got["tx_timeout"]; !ok {
		t.Errorf("a watched counter at zero is dropped: %v", got)
	}
}

func TestParseEthtoolS(t *testing.T) {
	good := "NIC statistics:\n     tx_timeout: 3\n     rx queue 0 bytes: 18446744073709551615\n\n     tx_timeout: 4\n"
	c, err := ParseEthtoolS(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counters{"tx_timeout": 4, "rx queue 0 bytes": 1<<64 - 1}); fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("parsed %v, want %v", c, want)
	}
	many := new(strings.Builder)
	for i := range MaxCounters + 1 {
		fmt.Fprintf(many, "c%d: 1\n", i)
	}
	for _, b := range []struct{ in, says string }{
		{"NIC statistics:\n     tx_timeout 3\n", "line 2"},
		{"     tx_timeout: -1\n", "line 1: counter tx_timeout"},
		{"     tx_timeout: 18446744073709551616\n", "not a count"},
		{"     : 5\n", "not \"name: value\""},
		{many.String(), fmt.Sprintf("more than %d counters", MaxCounters)},
		{"     x: " + strings.Repeat("9", 70000) + "\n", "too long"},
	} {
		if _, err := ParseEthtoolS(strings.NewReader(b.in)); err == nil || !strings.Contains(err.Error(), b.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseEthtoolS(%.40q): %v, want one line saying %q", b.in, err, b.says)
		}
	}
}

// files is a Reader that serves ethtool -S fixtures, one per read.
type files struct {
	paths []string
	n     int
}

func (f *files) Read(ctx context.Context, ifname string) (Counters, error) {
	if f.n == len(f.paths) {
		return nil, errors.New("no more fixtures")
	}
	fh, err := os.Open(f.paths[f.n])
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	f.n++
	return ParseEthtoolS(fh)
}

// The ENA fixtures: ethtool -S of an instance with two queues before and
// after a cell that ran into its outbound bandwidth and packet-rate
// allowances, after a quiet cell, and after a device reset.
func TestENAWindows(t *testing.T) {
	fixture := func(name string) string { return filepath.Join("testdata", "ena-"+name+".txt") }
	// Every counter of the fixtures that Watched keeps, by hand.
	watched := []string{"tx_timeout", "bw_in_allowance_exceeded", "bw_out_allowance_exceeded", "pps_allowance_exceeded",
		"conntrack_allowance_exceeded", "linklocal_allowance_exceeded",
		"queue_0_tx_dma_mapping_err", "queue_0_tx_prepare_ctx_err", "queue_0_rx_dma_mapping_err", "queue_0_rx_xdp_drop",
		"queue_1_tx_dma_mapping_err", "queue_1_tx_prepare_ctx_err", "queue_1_rx_dma_mapping_err", "queue_1_rx_xdp_drop"}
	slices.Sort(watched)
	cases := []struct {
		name          string
		before, after string
		moved         map[string]uint64 // the non-zero rises
		allowance     []string
		reset         []string
	}{
		{"allowances exceeded", "before", "after",
			map[string]uint64{"bw_out_allowance_exceeded": 1834, "pps_allowance_exceeded": 12, "queue_1_rx_xdp_drop": 40},
			[]string{"bw_out_allowance_exceeded", "pps_allowance_exceeded"}, nil},
		{"quiet", "after", "quiet", map[string]uint64{}, nil, nil},
		{"device reset", "after", "reset", map[string]uint64{"tx_timeout": 1},
			nil, []string{"queue_1_rx_xdp_drop"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &files{paths: []string{fixture(c.before), fixture(c.after)}}
			w, err := Begin(context.Background(), r, "ens5")
			if err != nil {
				t.Fatal(err)
			}
			d, err := w.End(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			moved := map[string]uint64{}
			for n, v := range d.Counters {
				names = append(names, n)
				if v != 0 {
					moved[n] = v
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, watched) {
				t.Errorf("watched %v\nwant    %v", names, watched)
			}
			if fmt.Sprint(moved) != fmt.Sprint(c.moved) {
				t.Errorf("rose %v, want %v", moved, c.moved)
			}
			if got := Allowance(d); !slices.Equal(got, c.allowance) {
				t.Errorf("Allowance = %v, want %v", got, c.allowance)
			}
			if !slices.Equal(d.Reset, c.reset) {
				t.Errorf("Reset = %v, want %v", d.Reset, c.reset)
			}
		})
	}
	// A failed read names the interface and the edge.
	r := &files{paths: []string{fixture("before")}}
	w, err := Begin(context.Background(), r, "ens5")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.End(context.Background()); err == nil || !strings.Contains(err.Error(), "ens5 at the window's end") {
		t.Errorf("End with a failing reader: %v", err)
	}
	if _, err := Begin(context.Background(), r, "ens6"); err == nil || !strings.Contains(err.Error(), "ens6 at the window's start") {
		t.Errorf("Begin with a failing reader: %v", err)
	}
}

// Counters that appear during the window count from zero; those that
// disappear are not reported.
func TestDeltaQueuesChanged(t *testing.T) {
	d := Delta(Counters{"queue_0_rx_xdp_drop": 5, "queue_1_rx_xdp_drop": 9}, Counters{"queue_0_rx_xdp_drop": 7, "queue_2_rx_xdp_drop": 3})
	if want := map[string]uint64{"queue_0_rx_xdp_drop": 2, "queue_2_rx_xdp_drop": 3}; fmt.Sprint(d.Counters) != fmt.Sprint(want) || d.Reset != nil {
		t.Errorf("Delta = %+v, want counters %v and no reset", d, want)
	}
}
