package engine

import (
	"encoding/binary"
	"os"
	"testing"
)

// Once mapped, every page of the function table is in this process's page
// tables (/proc/self/pagemap's present bit), so the runtime's signal
// handler reads it without a fault inside a run's window.
func TestPCTableIsMappedBeforeTheWindow(t *testing.T) {
	lo, hi, err := pcTableRange()
	if err != nil || lo == hi {
		t.Fatalf("no .gopclntab found in this process: %v", err)
	}
	if err := mapPCTable(); err != nil {
		t.Fatal(err)
	}
	present, pages := presentPages(t, lo, hi)
	if present != pages {
		t.Errorf("%d of the function table's %d pages are mapped", present, pages)
	}
}

// presentPages counts the pages of [lo, hi) present in this process.
func presentPages(t *testing.T, lo, hi uintptr) (present, pages int) {
	t.Helper()
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := uintptr(os.Getpagesize())
	first, last := lo/page, (hi-1)/page
	buf := make([]byte, 8*(last-first+1))
	if _, err := f.ReadAt(buf, int64(first*8)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(buf); i += 8 {
		if binary.LittleEndian.Uint64(buf[i:])>>63 == 1 {
			present++
		}
	}
	return present, len(buf) / 8
}
