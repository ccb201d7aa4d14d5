package export

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/iwkit/iwkit/decode"
)

// TestLevelRuns: levels added as runs decode, with parquet-go's
// RLE/bit-packed hybrid decoder, to the levels added, for runs of every
// length around the 8-level group and mixes of short and long runs.
func TestLevelRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := [][]int{{1}, {7}, {8}, {9}, {3, 5}, {3, 13}, {1, 1, 1, 1, 1, 1, 1, 1, 1}, {100000}, {5, 100, 3, 1, 2, 64, 7}}
	for range 200 {
		var c []int
		for range 1 + rng.IntN(40) {
			if rng.IntN(4) == 0 {
				c = append(c, 8+rng.IntN(300))
			} else {
				c = append(c, 1+rng.IntN(7))
			}
		}
		cases = append(cases, c)
	}
	for _, c := range cases {
		var l levelRuns
		var want []uint8
		v := uint8(rng.IntN(2))
		for _, n := range c {
			l.add(v, n)
			for range n {
				want = append(want, v)
			}
			if rng.IntN(3) != 0 { // else the same level again: runs merge
				v ^= 1
			}
		}
		enc := l.encode(nil)
		got, err := (&rle.Encoding{BitWidth: 1}).DecodeLevels(nil, enc)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if len(got) < len(want) || !bytes.Equal(got[:len(want)], want) {
			t.Fatalf("runs %v: decoded %v, want %v", c, got, want)
		}
		if len(got)-len(want) >= 8 {
			t.Fatalf("runs %v: %d levels decoded past the end", c, len(got)-len(want))
		}
		if l.n != len(want) || l.ones != bytes.Count(want, []byte{1}) {
			t.Fatalf("runs %v: n %d ones %d", c, l.n, l.ones)
		}
	}
}

// TestPageHeader: the hand-written page header is the Thrift PageHeader
// parquet-go reads.
func TestPageHeader(t *testing.T) {
	b := appendPageHeader(nil, 70000, 1234, 65536, 3, 65530, 12, 34, format.Plain)
	var h format.PageHeader
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), b, &h); err != nil {
		t.Fatal(err)
	}
	v2, ok := h.DataPageHeaderV2.Get()
	if !ok || h.Type != format.DataPageV2 || h.UncompressedPageSize != 70000 || h.CompressedPageSize != 1234 {
		t.Fatalf("header %+v", h)
	}
	want := format.DataPageHeaderV2{NumValues: 65536, NumNulls: 3, NumRows: 65530, Encoding: format.Plain,
		DefinitionLevelsByteLength: 12, RepetitionLevelsByteLength: 34, IsCompressed: thrift.New(true)}
	if !reflect.DeepEqual(v2, want) {
		t.Fatalf("v2 header %+v, want %+v", v2, want)
	}

	k := newColumn(&Column{Name: "s", Type: String}, &pageBufs{})
	for i, s := range []string{"b", "a", "b", "c"} {
		k.str(i, s)
	}
	k.endRowGroup(4)
	b, size := k.appendDictPage(nil)
	h = format.PageHeader{}
	if err := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(bytes.NewReader(b))).Decode(&h); err != nil {
		t.Fatal(err)
	}
	d, ok := h.DictionaryPageHeader.Get()
	if !ok || h.Type != format.DictionaryPage || h.UncompressedPageSize != 15 || d.NumValues != 3 || d.Encoding != format.Plain || d.IsSorted {
		t.Fatalf("dictionary page header %+v %+v", h, d)
	}
	if hdr := len(b) - int(h.CompressedPageSize); size != hdr+15 {
		t.Fatalf("dictionary page of %d octets uncompressed, want %d", size, hdr+15)
	}
}

// TestPDUGroupsResolve: every specialized group names consecutive fields
// of the table, in order, and writes them with their columns' types (a
// group writing an INT64 into an INT32 column would not fail here but in
// TestFastMatchesGeneric).
func TestPDUGroupsResolve(t *testing.T) {
	if len(pduGroups) != len(decode.FieldGroups) {
		t.Fatalf("%d pdus groups for %d groups of decode.FieldGroups", len(pduGroups), len(decode.FieldGroups))
	}
	for _, g := range pduGroups {
		if g.first < 0 {
			t.Errorf("group %v: not consecutive fields of the table", g.names)
		}
	}
}

// TestFastMatchesGeneric: for every committed capture, the pdus rows
// written by the specialized groups equal those of the generic walk over
// the field table, and the fast path was taken.
func TestFastMatchesGeneric(t *testing.T) {
	fastRows := 0
	for _, file := range committed(t) {
		dir := t.TempDir()
		useFast = false
		exportOne(t, file, filepath.Join(dir, "generic"))
		useFast = true
		exportOne(t, file, filepath.Join(dir, "fast"))
		generic, fast := readAll(t, filepath.Join(dir, "generic"), Pdus), readAll(t, filepath.Join(dir, "fast"), Pdus)
		if !reflect.DeepEqual(generic, fast) {
			for i := range min(len(generic), len(fast)) {
				if !reflect.DeepEqual(generic[i], fast[i]) {
					t.Fatalf("%s: pdus row %d:\ngeneric %v\nfast    %v", file, i, generic[i], fast[i])
				}
			}
			t.Fatalf("%s: %d rows generic, %d fast", file, len(generic), len(fast))
		}
		for _, r := range fast {
			if newPDUPlan(maskOf(t, r)).fast != nil {
				fastRows++
			}
		}
	}
	if fastRows == 0 {
		t.Fatal("no row took the fast path")
	}
}

// maskOf is the Present mask of the fields a row read back has.
func maskOf(t *testing.T, r Row) decode.Mask {
	var m decode.Mask
	for i := range pduFields {
		if _, ok := r[fieldColumn(pduFields[i].f.Name)]; ok {
			m |= 1 << fieldCond(t, pduFields[i].f)
		}
	}
	return m
}

// fieldCond is the presence bit of f: the one bit of the masks it is In.
func fieldCond(t *testing.T, f *decode.Field) int {
	for b := range 64 {
		if f.In(decode.Mask(1) << b) {
			return b
		}
	}
	t.Fatalf("field %s is in no mask", f.Name)
	return 0
}

// TestManyPagesAndRowGroups: a table written over two row groups
// and many pages per column, with NULL runs of every length, long and
// empty lists and long strings (the column index keeps a truncated
// bound), reads back with parquet-go value for value, and the footer's
// statistics and indexes agree with the rows.
func TestManyPagesAndRowGroups(t *testing.T) {
	dir := t.TempDir()
	p, err := newPart(Findings, dir, "many", "test")
	if err != nil {
		t.Fatal(err)
	}
	w := &row{t: Findings, p: p}
	rng := rand.New(rand.NewPCG(3, 4))
	n := RowGroupRows + 12345
	base := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	var want []Row
	long := string(bytes.Repeat([]byte("x"), 40))
	for i := range n {
		w.reset()
		r := Row{"capture": "many"}
		frame := int64(i + 1)
		w.i64(frame)
		w.time(base.Add(time.Duration(i)))
		w.i64(int64(i))
		r["frame"], r["time"], r["time_rel_ns"] = frame, base.Add(time.Duration(i)), int64(i)
		if (i/1000)%3 == 0 { // long NULL runs, and short ones below
			w.null()
			w.null()
			w.null()
			w.null()
		} else {
			w.i64(int64(i % 7))
			w.str("i2r")
			w.str("10.0.0.1:4420")
			w.str(long + string(rune('a'+i%26)))
			r["conn"], r["dir"], r["src"], r["dst"] = int64(i%7), "i2r", "10.0.0.1:4420", long+string(rune('a'+i%26))
		}
		sev := []string{"note", "warning", "error"}[rng.IntN(3)]
		msg := strconv.Itoa(rng.IntN(5000)) // a new string each row, more than a dictionary takes
		w.str(sev)
		w.str("code")
		w.str(msg)
		r["severity"], r["code"], r["message"] = sev, "code", msg
		frames := make([]int64, rng.IntN(4))
		xs := make([]int, len(frames))
		for k := range frames {
			frames[k] = int64(i + k)
			xs[k] = i + k
		}
		w.i64s(xs)
		r["frames"] = frames
		if rng.IntN(5) == 0 {
			w.str("checks")
			r["checks"] = "checks"
		} else {
			w.null()
		}
		if i%2 == 0 {
			seq := uint32(i%3) * 0x7fffffff // 0, 2^31-1, 2^32-2: unsigned order
			w.u32(seq)
			r["tcp_seq"] = uint64(seq)
		} else {
			w.null()
		}
		p.write(w)
		want = append(want, r)
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	if err := p.commit("test"); err != nil {
		t.Fatal(err)
	}
	final := PartPath(dir, Findings, "many", "test")
	got, err := readPart(final, Findings)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		r["capture"] = "many"
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("row %d:\n got %v\nwant %v", i, got[i], want[i])
		}
	}

	f, err := os.Open(final)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	md := pf.Metadata()
	if len(md.RowGroups) != 2 || md.NumRows != int64(n) {
		t.Fatalf("%d row groups, %d rows", len(md.RowGroups), md.NumRows)
	}
	// Every scalar column's chunk statistics are its rows' least and
	// greatest values, in the column type's order, and NULL count.
	for g, rg := range md.RowGroups {
		rows := want[g*RowGroupRows : min(len(want), (g+1)*RowGroupRows)]
		for c, col := range Findings.Cols {
			if col.Type == Int64s {
				continue
			}
			var lo, hi []byte
			var nulls int64
			for _, r := range rows {
				v, ok := r[col.Name]
				if !ok {
					nulls++
					continue
				}
				var b []byte
				switch x := v.(type) {
				case int64:
					b = binary.LittleEndian.AppendUint64(nil, uint64(x))
				case time.Time:
					b = binary.LittleEndian.AppendUint64(nil, uint64(x.UnixNano()))
				case uint64:
					b = binary.LittleEndian.AppendUint32(nil, uint32(x))
				case string:
					b = []byte(x)
				}
				k := newColumn(&Findings.Cols[c], nil)
				if lo == nil || k.less(b, lo) {
					lo = b
				}
				if hi == nil || k.less(hi, b) {
					hi = b
				}
			}
			st := rg.Columns[c].MetaData.Statistics
			if !bytes.Equal(st.MinValue, lo) || !bytes.Equal(st.MaxValue, hi) || st.NullCount != nulls {
				t.Errorf("row group %d %s: statistics %q..%q %d NULLs, want %q..%q %d", g, col.Name, st.MinValue, st.MaxValue, st.NullCount, lo, hi, nulls)
			}
		}
	}
	// STRING columns use a dictionary; message outgrows it and goes on
	// PLAIN.
	for g, rg := range md.RowGroups {
		encs := func(col string) (dict, plain bool) {
			for _, es := range rg.Columns[Findings.Column(col)].MetaData.EncodingStats {
				dict = dict || es.Encoding == format.RLEDictionary
				plain = plain || es.PageType == format.DataPageV2 && es.Encoding == format.Plain
			}
			return
		}
		if d, p := encs("severity"); !d || p {
			t.Errorf("row group %d: severity dictionary %v, PLAIN pages %v", g, d, p)
		}
		if d, p := encs("message"); !d || !p {
			t.Errorf("row group %d: message dictionary %v, PLAIN pages %v", g, d, p)
		}
	}
	seqCol := Findings.Column("tcp_seq")
	for g, rg := range md.RowGroups {
		s := rg.Columns[seqCol].MetaData.Statistics
		if !bytes.Equal(s.MinValue, []byte{0, 0, 0, 0}) || !bytes.Equal(s.MaxValue, []byte{0xfe, 0xff, 0xff, 0xff}) || s.NullCount != rg.NumRows/2 {
			t.Errorf("row group %d: tcp_seq statistics %+v", g, s)
		}
	}
	cis, ois := pf.ColumnIndexes(), pf.OffsetIndexes()
	if len(cis) != 2*len(Findings.Cols) || len(ois) != len(cis) {
		t.Fatalf("%d column indexes, %d offset indexes", len(cis), len(ois))
	}
	pages := 0
	for c, oi := range ois {
		pages += len(oi.PageLocations)
		ci := cis[c]
		if len(ci.NullPages) != len(oi.PageLocations) || !slices.IsSortedFunc(oi.PageLocations, func(a, b format.PageLocation) int { return int(a.FirstRowIndex - b.FirstRowIndex) }) {
			t.Fatalf("chunk %d: %d index pages, %d locations", c, len(ci.NullPages), len(oi.PageLocations))
		}
		if c%len(Findings.Cols) == Findings.Column("dst") {
			for k, mx := range ci.MaxValues {
				if !ci.NullPages[k] && (len(mx) > indexBound || string(mx) <= long) {
					t.Errorf("dst page %d: max bound %q", k, mx)
				}
			}
		}
	}
	if pages < 2*len(Findings.Cols)+10 {
		t.Errorf("only %d pages: the test wants several per chunk", pages)
	}
}

// TestEachReleasesSets: the results of ExportEach hold no set's pipeline
// (its exporter's buffers, its capture reader's): the memory of --each
// is that of the sets being exported, not of all the sets done.
func TestEachReleasesSets(t *testing.T) {
	files := committed(t)
	var sets []Set
	for i, f := range files {
		sets = append(sets, Set{Capture: fmt.Sprintf("s%d", i), Files: []string{f}})
	}
	dir := t.TempDir()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	res := ExportEach(sets, Config{Dir: dir}, 1, nil)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	grown := int64(ms.HeapAlloc) - int64(before)
	for _, r := range res {
		if r.Err != nil || r.Report == nil {
			t.Fatalf("%s: %v", r.Set.Capture, r.Err)
		}
	}
	// A set's pipeline is over 1 MB (the capture reader's buffer alone);
	// what a result keeps is its report, tens of kB.
	if per := grown / int64(len(sets)); per > 512<<10 {
		t.Errorf("%d sets exported: heap grew %d kB, %d kB a set kept", len(sets), grown>>10, per>>10)
	}
	runtime.KeepAlive(res)
}
