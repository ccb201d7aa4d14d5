package export

import "encoding/binary"

// levelRuns are the definition or repetition levels of one page, as runs
// of one level: run length << 1 | level. Every level of the export's
// schema is 0 or 1 (an optional column's definition level; a list's
// repetition and definition levels, its elements being required), so a
// run of NULLs, however long, is one entry: what makes a column absent
// from most rows (most field-table columns of most PDUs) cost nothing
// per row.
type levelRuns struct {
	runs []uint32
	n    int // levels in all
	ones int // levels equal to 1 (the rest are 0): the level histogram
}

// maxRun bounds one entry (the run length has 31 bits).
const maxRun = 1<<31 - 1

// add appends n levels v (0 or 1).
func (l *levelRuns) add(v uint8, n int) {
	if n <= 0 {
		return
	}
	l.n += n
	if v != 0 {
		l.ones += n
	}
	if k := len(l.runs); k > 0 && uint8(l.runs[k-1]&1) == v && int(l.runs[k-1]>>1)+n <= maxRun {
		l.runs[k-1] += uint32(n) << 1
		return
	}
	for n > maxRun {
		l.runs = append(l.runs, maxRun<<1|uint32(v))
		n -= maxRun
	}
	l.runs = append(l.runs, uint32(n)<<1|uint32(v))
}

func (l *levelRuns) reset() { l.runs, l.n, l.ones = l.runs[:0], 0, 0 }

// encode appends the levels in the RLE/bit-packed hybrid encoding of bit
// width 1 (Parquet Encodings.md, "Run Length Encoding / Bit-Packing
// Hybrid"), without the length prefix (data page v2 gives the length in
// its header). Runs of 8 or more are RLE runs (a ULEB128 header
// count << 1, then the level in one octet); shorter ones go into
// bit-packed runs (header groups << 1 | 1, then a group of 8 levels per
// octet, first level in the least significant bit). A bit-packed run in
// the middle holds a whole number of groups: a long run first tops up
// the pending group. Only the last group may be padded: the page header's
// value count says where the levels end.
func (l *levelRuns) encode(dst []byte) []byte {
	var (
		pack []byte // pending bit-packed groups
		nlit int    // levels in pack
	)
	flush := func() {
		groups := (nlit + 7) / 8
		for off := 0; off < groups; off += 63 { // one-octet headers, as parquet-mr writes them
			g := min(63, groups-off)
			dst = binary.AppendUvarint(dst, uint64(g)<<1|1)
			dst = append(dst, pack[off:off+g]...)
		}
		pack, nlit = pack[:0], 0
	}
	lit := func(v uint32, n int) {
		for range n {
			if nlit%8 == 0 {
				pack = append(pack, 0)
			}
			pack[len(pack)-1] |= byte(v) << (nlit % 8)
			nlit++
		}
	}
	for _, r := range l.runs {
		v, n := r&1, int(r>>1)
		if nlit%8 != 0 {
			k := min(n, 8-nlit%8)
			lit(v, k)
			n -= k
		}
		if n < 8 {
			lit(v, n)
			continue
		}
		if nlit > 0 {
			flush()
		}
		dst = binary.AppendUvarint(dst, uint64(n)<<1)
		dst = append(dst, byte(v))
	}
	if nlit > 0 {
		flush()
	}
	return dst
}
