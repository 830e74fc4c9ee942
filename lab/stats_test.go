package lab

import "testing"

func TestValueLayout(t *testing.T) {
	l := NewValueLayout(1<<20, 9)
	v := l.Full(5, 77)
	if int64(len(v)) != l.Size {
		t.Fatal("size")
	}
	if gen, ok := l.CheckEnds(v[:ValueHeaderLen], v[l.Size-ValueTrailerLen:], 5); !ok || gen != 77 {
		t.Fatalf("a fresh value does not check: gen %d ok %v", gen, ok)
	}
	if _, ok := l.CheckEnds(v[:ValueHeaderLen], v[l.Size-ValueTrailerLen:], 6); ok {
		t.Error("value of key 5 accepted as key 6")
	}
	other := l.Full(5, 78)
	if _, ok := l.CheckEnds(v[:ValueHeaderLen], other[l.Size-ValueTrailerLen:], 5); ok {
		t.Error("header and trailer of two writes accepted together")
	}
	if !l.CheckBody(0, v) {
		t.Error("body of a fresh value does not match")
	}
	v[1000] ^= 1
	if l.CheckBody(0, v) || l.CheckBody(512, v[512:2048]) {
		t.Error("flipped body byte not seen")
	}
	if !l.CheckBody(2048, v[2048:]) {
		t.Error("a chunk after the flipped byte should still match")
	}
	// A different size or seed gives a different body.
	if l2 := NewValueLayout(1<<20, 10); l2.CheckBody(0, l.Full(1, 0)) {
		t.Error("seed does not change the body")
	}
}

func TestHistogramSummaries(t *testing.T) {
	a, b := NewHistogram(), NewHistogram()
	for i := int64(1); i <= 1000; i++ {
		RecordUs(a, i*1000) // 1..1000 µs
	}
	RecordUs(b, 0)                                 // below the floor: recorded as 1 µs
	if !RecordUs(b, int64(2*HistHighestUs)*1000) { // beyond an hour: clamped, and said so
		t.Error("a value past the top was not reported as clamped")
	}
	sa, err := Summarize(a)
	if err != nil {
		t.Fatal(err)
	}
	if sa.Count != 1000 || sa.P50 < 499 || sa.P50 > 501 || sa.P99 < 989 || sa.P99 > 991 || sa.Max < 999 || sa.Max > 1001 {
		t.Errorf("percentiles off: %+v", sa)
	}
	sb, _ := Summarize(b)
	m, err := MergeSummaries(sa, sb)
	if err != nil {
		t.Fatal(err)
	}
	direct := NewHistogram()
	direct.Merge(a)
	direct.Merge(b)
	want, _ := Summarize(direct)
	if m.Count != 1002 || m.P99 != want.P99 || m.Max != want.Max || m.P50 != want.P50 {
		t.Errorf("merge of encodings %+v differs from direct merge %+v", m, want)
	}
	if float64(HistHighestUs)*0.999 > m.Max {
		t.Errorf("clamped value lost: max %v", m.Max)
	}
	empty, err := Summarize(NewHistogram())
	if err != nil || empty.Count != 0 || empty.P99 != 0 {
		t.Errorf("empty histogram: %+v %v", empty, err)
	}
	if _, err := MergeSummaries(LatencySummary{Count: 1, Histogram: "not base64!"}); err == nil {
		t.Error("a corrupt histogram merged")
	}
}

func TestLatencyBuckets(t *testing.T) {
	for _, us := range []int64{1, 2, 10, 999, 1000, 123456, 10_000_000, HistHighestUs} {
		b := LatBucket(us)
		mid := LatBucketValue(b)
		if r := mid / float64(us); us > 20 && (r < 0.95 || r > 1.05) {
			t.Errorf("%d us lands in bucket %d of middle %.1f us (%.1f%% off)", us, b, mid, (r-1)*100)
		}
	}
	if LatBucket(0) != 0 || LatBucket(HistHighestUs*10) != LatBuckets-1 {
		t.Error("out-of-range values are not clamped to the end buckets")
	}
}

// The values of a mix are prefixes of one pattern of the mix's largest
// size: each size's value verifies as that size, exactly, and as no other.
func TestValueLayoutPrefixes(t *testing.T) {
	big := NewValueLayout(1<<20, 9)
	for _, size := range []int64{1 << 20, 1<<20 - 1, 300_000, 4096, MinVerifiableSize, 47, 1} {
		l := big.Prefix(size)
		if l.Size != size || int64(len(l.Body)) != size || l.Seed != big.Seed {
			t.Fatalf("prefix %d: size %d, body %d, seed %d", size, l.Size, len(l.Body), l.Seed)
		}
		v := l.Full(3, 11)
		if !l.CheckBody(0, v) {
			t.Errorf("%d: the value's body does not check", size)
		}
		if size < MinVerifiableSize {
			continue
		}
		if _, ok := l.CheckEnds(v[:ValueHeaderLen], v[size-ValueTrailerLen:], 3); !ok {
			t.Errorf("%d: the value's ends do not check", size)
		}
		// The same bytes cut to another length are refused by the length
		// the header carries.
		otherSize := size - 8
		if size+8 <= big.Size {
			otherSize = size + 8
		}
		other := big.Prefix(otherSize)
		if _, ok := other.CheckEnds(v[:ValueHeaderLen], v[size-ValueTrailerLen:], 3); ok {
			t.Errorf("%d: a value checks as %d bytes", size, otherSize)
		}
		v[size/2+ValueHeaderLen/2] ^= 1
		if l.CheckBody(0, v) && size > MinVerifiableSize {
			t.Errorf("%d: a flipped body byte is not seen", size)
		}
	}
	// The whole-size prefix is the layout itself.
	if p := big.Prefix(big.Size); !p.CheckBody(0, big.Full(1, 2)) {
		t.Error("the full prefix differs from the layout")
	}
	if n := testing.AllocsPerRun(100, func() {
		p := big.Prefix(4096)
		var hdr [ValueHeaderLen]byte
		p.PutHeader(hdr[:], 1, 2)
	}); n != 0 {
		t.Errorf("Prefix allocates %.0f times", n)
	}
}
