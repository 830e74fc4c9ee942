package engine

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// The executable's function table (.gopclntab) is mapped in before a run's
// window. Go's runtime reads it in its preemption signal handler (is the
// interrupted PC a safe point?), and sysmon signals every worker that ran
// 10 ms without yielding, which a raw worker always has. Each first read
// of one of its pages is a minor fault in the worker, counted in the
// record's faults per request: under TLS the interrupted PCs spread over
// the cipher code, and 4 of the 5 faults a warmed 3 s TLS GET window of
// 8 MiB values took were these (perf record -e minor-faults). The pages
// are the page cache's (22 MB for linerate): mapping them costs no memory
// of the process's own.

var mapPCTableOnce sync.Once

// mapPCTableOnceOnly maps the table in, once per process; a kernel
// without MADV_POPULATE_READ (before 5.14) leaves the faults where they
// were, and the record's faults per request still tells.
func mapPCTableOnceOnly() {
	mapPCTableOnce.Do(func() { _ = mapPCTable() })
}

// mapPCTable populates the page tables of this executable's .gopclntab.
func mapPCTable() error {
	lo, hi, err := pcTableRange()
	if err != nil || lo == hi {
		return err
	}
	page := uintptr(os.Getpagesize())
	start := lo &^ (page - 1)
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, start, hi-start, unix.MADV_POPULATE_READ); e != 0 {
		return fmt.Errorf("madvise populate .gopclntab: %w", e)
	}
	return nil
}

// pcTableRange is where .gopclntab lies in this process: its file range
// found in the executable's mappings (/proc/self/maps), so a
// position-independent build is placed right too. 0, 0: not found.
func pcTableRange() (lo, hi uintptr, err error) {
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		return 0, 0, err
	}
	sec := f.Section(".gopclntab")
	f.Close()
	if sec == nil {
		return 0, 0, nil
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, 0, err
	}
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, 0, err
	}
	defer maps.Close()
	s := bufio.NewScanner(maps)
	for s.Scan() {
		// start-end perms offset dev inode path
		f := strings.Fields(s.Text())
		if len(f) < 6 || f[5] != exe {
			continue
		}
		a, b, _ := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(a, 16, 64)
		end, err2 := strconv.ParseUint(b, 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		if sec.Offset >= off && sec.Offset+sec.Size <= off+(end-start) {
			lo = uintptr(start + sec.Offset - off)
			return lo, lo + uintptr(sec.Size), nil
		}
	}
	return 0, 0, s.Err()
}
