package export

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"github.com/klauspost/compress/s2"
	"github.com/parquet-go/parquet-go/format"
)

// column writes one column of a part file: the values of a page as they
// come, PLAIN-encoded (Encodings.md), its levels as runs (levelRuns),
// and each full page, Snappy-compressed behind its header, into the
// column chunk of the row group, which the file writes when the row
// group ends. Each value costs an append; a NULL costs nothing until the
// column's next value or the end of the row group, which adds the NULLs
// before it as one run.
type column struct {
	col    *Column
	phys   format.Type
	maxDef uint8 // 1 for optional columns and lists
	list   bool  // a LIST: repetition levels too
	// unsigned: INT32 and INT64 columns of unsigned logical type, whose
	// statistics compare unsigned (LogicalTypes.md, sort order).
	unsigned bool
	path     []string

	// The page being built.
	vals   []byte // PLAIN values (booleans: bit-packed, nbool of them)
	nbool  int
	defs   levelRuns
	reps   levelRuns
	values int // levels (NULLs and empty lists included): the page's num_values
	nulls  int
	ones   int   // present values since the last run of NULLs (optional columns)
	first  int64 // first row of the page in the row group (its rows end at rgRows)

	// rgRows: rows of the row group the column has levels for (a
	// NULL-able column lags behind the row being written until its next
	// value or the end of the row group).
	rgRows int

	// The column chunk of the row group.
	chunk        []byte // page headers and pages
	uncompressed int64  // chunk size had the pages not been compressed
	chunkValues  int64
	chunkNulls   int64
	min, max     []byte // PLAIN octets (byte arrays: the value itself)
	hasBounds    bool
	unencoded    int64 // byte-array value octets, lengths excluded
	defHist      [2]int64
	repHist      [2]int64
	pages        []pageInfo
	buf          *pageBufs

	// The dictionary of a STRING column's chunk (nil for other
	// columns): its entries, PLAIN-encoded in dictVals; the page's
	// values as runs of entry numbers. dictOff: the chunk outgrew it
	// and its later pages are PLAIN.
	dict       map[string]uint32
	entries    []string
	dictVals   []byte
	idx        []idxRun
	dictOff    bool
	lastStr    string
	lastIdx    uint32
	hasLast    bool
	dictPages  int
	plainPages int

	// The byte-array bounds of the page (in its values) and the last
	// value's octets as given.
	pageMin, pageMax []byte
	hasPage          bool
	prevData         *byte
	prevLen          int
}

// pageBufs are the buffers the columns of a file share to encode a page.
type pageBufs struct{ comp, levels []byte }

// idxRun is a run of one dictionary entry number.
type idxRun struct{ v, n uint32 }

// The dictionary of a chunk is given up (its later pages written PLAIN)
// past this many entries or octets: names and addresses repeat, a
// message column does not.
const (
	maxDictEntries = 4096
	maxDictOctets  = 256 << 10
)

// pageInfo is what the column and offset indexes say of a page.
type pageInfo struct {
	off      int // in the chunk
	size     int32
	first    int64
	nulls    int64
	allNull  bool
	min, max []byte
	defHist  [2]int64
	repHist  [2]int64
}

// pageSize is the PLAIN value octets after which a page is cut: 64 KiB
// (BENCHMARKS.md, "Export speed, issue 19": fewer headers, index entries
// and Snappy calls than 16 KiB, no gain beyond).
const pageSize = 64 << 10

// maxPageRuns cuts a page whose levels alternate too often (each run is
// 4 octets until the page is encoded).
const maxPageRuns = 16 << 10

func newColumn(c *Column, buf *pageBufs) *column {
	k := &column{col: c, path: []string{c.Name}, buf: buf}
	switch c.Type {
	case Bool:
		k.phys = format.Boolean
	case Uint8, Uint16, Uint32, Uint32s:
		k.phys, k.unsigned = format.Int32, true
	case Uint64:
		k.phys, k.unsigned = format.Int64, true
	case Int64, Time, Int64s:
		k.phys = format.Int64
	case String, Bytes, Strings:
		k.phys = format.ByteArray
	}
	if c.Type == String {
		k.dict = map[string]uint32{}
	}
	switch c.Type {
	case Int64s, Strings, Uint32s:
		// A required LIST of required elements (LogicalTypes.md, "Lists"):
		// NAME (LIST) { repeated group list { required TYPE element } }.
		k.list, k.maxDef = true, 1
		k.path = []string{c.Name, "list", "element"}
	default:
		if c.Optional {
			k.maxDef = 1
		}
	}
	return k
}

// fill adds the NULLs of the rows before row (optional columns): the
// present values since the last NULL as one run of level 1, then the
// NULLs as one run of level 0.
func (k *column) fill(row int) {
	n := row - k.rgRows
	if n <= 0 {
		return
	}
	if k.maxDef == 0 {
		panic(fmt.Sprintf("export: no value in required column %s", k.col.Name))
	}
	k.defs.add(1, k.ones)
	k.ones = 0
	k.defs.add(0, n)
	k.values += n
	k.nulls += n
	k.rgRows = row
	if len(k.defs.runs) >= maxPageRuns {
		k.flushPage()
	}
}

// A value is written in three steps: NULLs before it (if the column lags
// behind the row), its PLAIN octets, then end. What is per value is kept
// to counters: a present value's definition level 1 is counted (ones)
// and becomes a run at the next NULL or the page's end.

// end ends a row of one value.
func (k *column) end(row int) {
	k.ones++
	k.values++
	k.rgRows = row + 1
	if len(k.vals) >= pageSize {
		k.flushPage()
	}
}

func (k *column) int32(row int, x uint32) {
	if k.rgRows != row {
		k.fill(row)
	}
	k.vals = binary.LittleEndian.AppendUint32(k.vals, x)
	k.end(row)
}

func (k *column) int64(row int, x uint64) {
	if k.rgRows != row {
		k.fill(row)
	}
	k.vals = binary.LittleEndian.AppendUint64(k.vals, x)
	k.end(row)
}

func (k *column) bool(row int, x bool) {
	if k.rgRows != row {
		k.fill(row)
	}
	if k.nbool%8 == 0 {
		k.vals = append(k.vals, 0)
	}
	if x {
		k.vals[len(k.vals)-1] |= 1 << (k.nbool % 8)
	}
	k.nbool++
	k.end(row)
}

// str writes a STRING value: its dictionary entry's number, the entry
// added if new (the value before it is known by its address: a static
// name or a cached address text), or PLAIN once the chunk has outgrown
// its dictionary.
func (k *column) str(row int, s string) {
	if k.dict == nil || k.dictOff {
		k.byteArray(row, unsafe.Slice(unsafe.StringData(s), len(s)), true)
		return
	}
	if k.rgRows != row {
		k.fill(row)
	}
	i := k.lastIdx
	if !k.hasLast || unsafe.StringData(s) != unsafe.StringData(k.lastStr) || len(s) != len(k.lastStr) {
		j, ok := k.dict[s]
		if !ok {
			if len(k.entries) >= maxDictEntries || len(k.dictVals)+4+len(s) > maxDictOctets {
				k.flushPage() // the pages so far use the dictionary, the rest are PLAIN
				k.dictOff = true
				k.byteArray(row, unsafe.Slice(unsafe.StringData(s), len(s)), true)
				return
			}
			j = uint32(len(k.entries))
			k.dict[s] = j
			k.entries = append(k.entries, s)
			k.dictVals = binary.LittleEndian.AppendUint32(k.dictVals, uint32(len(s)))
			k.dictVals = append(k.dictVals, s...)
		}
		i, k.lastStr, k.lastIdx, k.hasLast = j, s, j, true
	}
	if n := len(k.idx); n > 0 && k.idx[n-1].v == i {
		k.idx[n-1].n++
	} else {
		k.idx = append(k.idx, idxRun{i, 1})
	}
	k.unencoded += int64(len(s))
	k.ones++
	k.values++
	k.rgRows = row + 1
	if len(k.idx) >= maxPageRuns {
		k.flushPage()
	}
}

// dictPage reports whether the page being built is dictionary-encoded.
func (k *column) dictPage() bool { return k.dict != nil && !k.dictOff }

// encodeIndexes appends the page's entry numbers as RLE_DICTIONARY data
// (Encodings.md, "Dictionary Encoding"): the bit width in one octet, then
// the numbers in the RLE/bit-packed hybrid, here RLE runs only (a ULEB128
// header count << 1, then the number in as many octets as the width
// needs), and the page's least and greatest value.
func (k *column) encodeIndexes(dst []byte) []byte {
	bw := max(1, bits.Len(uint(len(k.entries)-1)))
	nb := (bw + 7) / 8
	dst = append(dst, byte(bw))
	for _, r := range k.idx {
		dst = binary.AppendUvarint(dst, uint64(r.n)<<1)
		for b := range nb {
			dst = append(dst, byte(r.v>>(8*b)))
		}
		k.widen(unsafe.Slice(unsafe.StringData(k.entries[r.v]), len(k.entries[r.v])))
	}
	return dst
}

// byteArray writes b; immutable says b's octets never change (a Go
// string's), which lets byteBounds know a repeated value by its address.
func (k *column) byteArray(row int, b []byte, immutable bool) {
	if k.rgRows != row {
		k.fill(row)
	}
	if k.dictPage() { // octets for a STRING column: PLAIN from here on
		k.flushPage()
		k.dictOff = true
	}
	k.vals = binary.LittleEndian.AppendUint32(k.vals, uint32(len(b)))
	k.vals = append(k.vals, b...)
	k.unencoded += int64(len(b))
	k.byteBounds(b, immutable)
	k.end(row)
}

// byteBounds keeps the page's least and greatest byte array up to date
// as values come (a page of names repeats few): a string given by the
// same octets as the one before, as a static name or a cached address
// text is, costs a pointer comparison.
func (k *column) byteBounds(b []byte, immutable bool) {
	p := unsafe.SliceData(b)
	if immutable && p == k.prevData && len(b) == k.prevLen && k.hasPage {
		return
	}
	k.prevData, k.prevLen = p, len(b)
	if !immutable {
		k.prevData = nil
	}
	// Compare with the copy in the page: b may alias a buffer that
	// changes before the page is written.
	k.widen(k.vals[len(k.vals)-len(b):])
}

// widen takes x, octets that stay put until the page is written, into the
// page's least and greatest byte array (its column-index bounds).
func (k *column) widen(x []byte) {
	if !k.hasPage {
		k.pageMin, k.pageMax, k.hasPage = x, x, true
		return
	}
	if bytes.Compare(x, k.pageMin) < 0 {
		k.pageMin = x
	}
	if bytes.Compare(x, k.pageMax) > 0 {
		k.pageMax = x
	}
}

// listInt64s, listInt32s and listStrings write one row of a list column:
// repetition level 0 on its first element and 1 on the others,
// definition level 1 on each; an empty list is one level 0 with no value.
func (k *column) listStart(n int) {
	if n == 0 {
		k.reps.add(0, 1)
		k.defs.add(0, 1)
		k.values++
		k.nulls++
		return
	}
	k.reps.add(0, 1)
	k.reps.add(1, n-1)
	k.defs.add(1, n)
	k.values += n
}

func (k *column) listEnd(row int) {
	k.rgRows = row + 1
	if len(k.vals) >= pageSize || len(k.defs.runs) >= maxPageRuns {
		k.flushPage()
	}
}

// flushPage compresses the page into the chunk: a data page v2
// (parquet-format, "Data pages"): its header, the repetition and
// definition levels uncompressed, then the values Snappy-compressed.
func (k *column) flushPage() {
	rows := k.rgRows - int(k.first)
	if rows == 0 {
		return
	}
	if !k.list && k.maxDef != 0 {
		k.defs.add(1, k.ones)
	}
	k.ones = 0
	enc := format.Plain
	if k.dictPage() {
		if len(k.idx) > 0 {
			enc = format.RLEDictionary
			k.vals = k.encodeIndexes(k.vals[:0])
			k.dictPages++
		} else {
			k.plainPages++ // NULLs only: no values, no dictionary needed
		}
	} else {
		k.plainPages++
	}
	pi := pageInfo{off: len(k.chunk), first: k.first, nulls: int64(k.nulls), allNull: k.nulls == k.values}
	if !pi.allNull {
		pi.min, pi.max = k.bounds()
		if !k.hasBounds {
			k.min, k.max, k.hasBounds = append(k.min[:0], pi.min...), append(k.max[:0], pi.max...), true
		} else {
			if k.less(pi.min, k.min) {
				k.min = append(k.min[:0], pi.min...)
			}
			if k.less(k.max, pi.max) {
				k.max = append(k.max[:0], pi.max...)
			}
		}
		if k.phys == format.ByteArray { // the column index keeps 16 octets
			pi.min, pi.max = truncMin(pi.min), truncMax(pi.max)
		}
	}
	if k.maxDef != 0 {
		pi.defHist = [2]int64{int64(k.defs.n - k.defs.ones), int64(k.defs.ones)}
	}
	if k.list {
		pi.repHist = [2]int64{int64(k.reps.n - k.reps.ones), int64(k.reps.ones)}
	}
	lv := k.reps.encode(k.buf.levels[:0])
	repLen := len(lv)
	lv = k.defs.encode(lv)
	k.buf.levels = lv
	if n := s2.MaxEncodedLen(len(k.vals)); cap(k.buf.comp) < n {
		k.buf.comp = make([]byte, n)
	}
	comp := s2.EncodeSnappy(k.buf.comp[:cap(k.buf.comp)], k.vals)
	k.chunk = appendPageHeader(k.chunk, len(lv)+len(k.vals), len(lv)+len(comp),
		k.values, k.nulls, rows, len(lv)-repLen, repLen, enc)
	hdr := len(k.chunk) - pi.off
	k.chunk = append(k.chunk, lv...)
	k.chunk = append(k.chunk, comp...)
	pi.size = int32(len(k.chunk) - pi.off)
	k.uncompressed += int64(hdr + len(lv) + len(k.vals))
	k.chunkValues += int64(k.values)
	k.chunkNulls += int64(k.nulls)
	k.defHist[0] += pi.defHist[0]
	k.defHist[1] += pi.defHist[1]
	k.repHist[0] += pi.repHist[0]
	k.repHist[1] += pi.repHist[1]
	k.pages = append(k.pages, pi)

	k.first += int64(rows)
	k.vals, k.nbool = k.vals[:0], 0
	k.pageMin, k.pageMax, k.hasPage, k.prevData = nil, nil, false, nil
	k.idx = k.idx[:0]
	k.defs.reset()
	k.reps.reset()
	k.values, k.nulls = 0, 0
}

// endRowGroup completes the column's rows up to rows and its last page.
func (k *column) endRowGroup(rows int) {
	if !k.list {
		k.fill(rows) // NULLs to the end; a required column cannot lag
	}
	k.flushPage()
}

// resetChunk readies the column for the next row group (its buffers
// kept).
func (k *column) resetChunk() {
	k.chunk = k.chunk[:0]
	k.uncompressed, k.chunkValues, k.chunkNulls, k.unencoded = 0, 0, 0, 0
	k.min, k.max, k.hasBounds = k.min[:0], k.max[:0], false
	k.defHist, k.repHist = [2]int64{}, [2]int64{}
	k.pages = k.pages[:0]
	k.first, k.rgRows = 0, 0
	if k.dict != nil {
		clear(k.dict)
		clear(k.entries) // drop the references
		k.entries, k.dictVals, k.dictOff, k.lastStr, k.hasLast = k.entries[:0], k.dictVals[:0], false, "", false
	}
	k.dictPages, k.plainPages = 0, 0
}

// appendDictPage appends the chunk's dictionary page, if its pages use
// one: a DICTIONARY_PAGE header (Thrift compact: field 7 is its
// dictionary_page_header, delta 4 from field 3) and the entries, PLAIN,
// Snappy-compressed. uncompressed is the page's size had the entries
// not been compressed.
func (k *column) appendDictPage(b []byte) (_ []byte, uncompressed int) {
	if k.dictPages == 0 {
		return b, 0
	}
	n0 := len(b)
	if n := s2.MaxEncodedLen(len(k.dictVals)); cap(k.buf.comp) < n {
		k.buf.comp = make([]byte, n)
	}
	comp := s2.EncodeSnappy(k.buf.comp[:cap(k.buf.comp)], k.dictVals)
	b = i32Field(b, int(format.DictionaryPage)) // 1: type
	b = i32Field(b, len(k.dictVals))            // 2: uncompressed_page_size
	b = i32Field(b, len(comp))                  // 3: compressed_page_size
	b = append(b, 0x4c)                         // 7: dictionary_page_header
	b = i32Field(b, len(k.entries))             //   1: num_values
	b = i32Field(b, int(format.Plain))          //   2: encoding
	b = append(b, 0x12, 0, 0)                   //   3: is_sorted = false; end of both structs
	return append(b, comp...), len(b) - n0 + len(k.dictVals)
}

// bounds are the least and greatest value of the page, PLAIN-encoded
// (integers read in place where the CPU is little-endian, as PLAIN is)
// (byte arrays without their length), in the order of the column's
// logical type: signed for INT64, unsigned for the unsigned integers,
// octet by octet for byte arrays, false before true.
func (k *column) bounds() (lo, hi []byte) {
	v := k.vals
	if !littleEndian && (k.phys == format.Int32 || k.phys == format.Int64) {
		v = k.swapped()
	}
	switch k.phys {
	case format.Boolean:
		var t, f bool
		for i := range k.nbool {
			if v[i/8]>>(i%8)&1 != 0 {
				t = true
			} else {
				f = true
			}
		}
		lo, hi = []byte{1}, []byte{0}
		if f {
			lo[0] = 0
		}
		if t {
			hi[0] = 1
		}
	case format.Int32: // unsigned, every INT32 column here
		a, b := uint32(math.MaxUint32), uint32(0)
		for _, x := range unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(v))), len(v)/4) {
			a, b = min(a, x), max(b, x)
		}
		lo, hi = binary.LittleEndian.AppendUint32(nil, a), binary.LittleEndian.AppendUint32(nil, b)
	case format.Int64:
		xs := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(v))), len(v)/8)
		if k.unsigned {
			a, b := uint64(math.MaxUint64), uint64(0)
			for _, x := range xs {
				a, b = min(a, x), max(b, x)
			}
			lo, hi = binary.LittleEndian.AppendUint64(nil, a), binary.LittleEndian.AppendUint64(nil, b)
		} else {
			a, b := int64(math.MaxInt64), int64(math.MinInt64)
			for _, x := range xs {
				a, b = min(a, int64(x)), max(b, int64(x))
			}
			lo, hi = binary.LittleEndian.AppendUint64(nil, uint64(a)), binary.LittleEndian.AppendUint64(nil, uint64(b))
		}
	case format.ByteArray: // kept as the values came (byteBounds)
		lo, hi = append([]byte{}, k.pageMin...), append([]byte{}, k.pageMax...)
	}
	return lo, hi
}

// less compares two PLAIN-encoded bounds in the column's order.
func (k *column) less(a, b []byte) bool {
	switch k.phys {
	case format.Boolean:
		return a[0] < b[0]
	case format.Int32:
		return binary.LittleEndian.Uint32(a) < binary.LittleEndian.Uint32(b)
	case format.Int64:
		x, y := binary.LittleEndian.Uint64(a), binary.LittleEndian.Uint64(b)
		if k.unsigned {
			return x < y
		}
		return int64(x) < int64(y)
	}
	return bytes.Compare(a, b) < 0
}

// indexBound is the length the column index keeps of a byte array bound.
const indexBound = 16

// truncMin is a lower bound of b no longer than indexBound: its prefix.
func truncMin(b []byte) []byte {
	if len(b) <= indexBound {
		return b
	}
	return b[:indexBound]
}

// truncMax is an upper bound of b no longer than indexBound: its prefix
// with the last octet that can be incremented incremented; b itself if
// there is none.
func truncMax(b []byte) []byte {
	if len(b) <= indexBound {
		return b
	}
	p := bytes.Clone(b[:indexBound])
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xff {
			p[i]++
			return p[:i+1]
		}
	}
	return b
}

// i32Field appends an i32 field of the next field id (delta 1): its
// header, then the value zigzag-encoded as a ULEB128.
func i32Field(b []byte, x int) []byte {
	return binary.AppendUvarint(append(b, 0x15), uint64(uint32(int32(x)<<1^int32(x)>>31)))
}

// appendPageHeader appends a PageHeader of a DATA_PAGE_V2, values enc,
// Snappy, in the Thrift compact protocol (parquet.thrift; the compact
// protocol's field header is the field id delta in the high nibble and
// the type in the low one: 5 i32, 12 struct, 1 boolean true).
func appendPageHeader(b []byte, uncompressed, compressed, values, nulls, rows, defLen, repLen int, enc format.Encoding) []byte {
	i32 := i32Field
	b = i32(b, int(format.DataPageV2)) // 1: type
	b = i32(b, uncompressed)           // 2: uncompressed_page_size
	b = i32(b, compressed)             // 3: compressed_page_size
	b = append(b, 0x5c)                // 8: data_page_header_v2
	b = i32(b, values)                 //   1: num_values
	b = i32(b, nulls)                  //   2: num_nulls
	b = i32(b, rows)                   //   3: num_rows
	b = i32(b, int(enc))               //   4: encoding
	b = i32(b, defLen)                 //   5: definition_levels_byte_length
	b = i32(b, repLen)                 //   6: repetition_levels_byte_length
	b = append(b, 0x11)                //   7: is_compressed = true
	return append(b, 0, 0)             // end of both structs
}

// littleEndian: the CPU's integers are laid out as PLAIN's.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// swapped is a copy of the page's integers in the CPU's order.
func (k *column) swapped() []byte {
	v := bytes.Clone(k.vals)
	if k.phys == format.Int32 {
		for i := 0; i+4 <= len(v); i += 4 {
			binary.NativeEndian.PutUint32(v[i:], binary.LittleEndian.Uint32(v[i:]))
		}
		return v
	}
	for i := 0; i+8 <= len(v); i += 8 {
		binary.NativeEndian.PutUint64(v[i:], binary.LittleEndian.Uint64(v[i:]))
	}
	return v
}
