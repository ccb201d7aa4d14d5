package export

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/iwkit/iwkit/internal/version"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// ColType is the type of a column, as it is in the Parquet files. Only
// standard Parquet logical types are used (LogicalTypes.md): any engine
// that reads Parquet reads them.
type ColType uint8

const (
	Bool    ColType = iota + 1 // BOOLEAN
	Uint8                      // INT32, INT(8, false)
	Uint16                     // INT32, INT(16, false)
	Uint32                     // INT32, INT(32, false)
	Uint64                     // INT64, INT(64, false)
	Int64                      // INT64, INT(64, true)
	String                     // BYTE_ARRAY, STRING
	Bytes                      // BYTE_ARRAY, no logical type (binary)
	Time                       // INT64, TIMESTAMP(isAdjustedToUTC=true, NANOS)
	Int64s                     // LIST of required INT64 (INT(64, true))
	Strings                    // LIST of required STRING
	Uint32s                    // LIST of required INT32 (INT(32, false))
)

// SQL names the type as DuckDB shows it: what docs/parquet.md lists.
func (t ColType) SQL() string {
	return [...]string{"", "BOOLEAN", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "BIGINT", "VARCHAR", "BLOB",
		"TIMESTAMP WITH TIME ZONE", "BIGINT[]", "VARCHAR[]", "UINTEGER[]"}[t]
}

// goType and tag give the column to parquet-go's schema builder.
func (t ColType) goType() (reflect.Type, string) {
	switch t {
	case Bool:
		return reflect.TypeFor[bool](), ""
	case Uint8:
		return reflect.TypeFor[uint8](), ""
	case Uint16:
		return reflect.TypeFor[uint16](), ""
	case Uint32:
		return reflect.TypeFor[uint32](), ""
	case Uint64:
		return reflect.TypeFor[uint64](), ""
	case Int64:
		return reflect.TypeFor[int64](), ""
	case String:
		return reflect.TypeFor[string](), ""
	case Bytes:
		return reflect.TypeFor[[]byte](), ""
	case Time:
		return reflect.TypeFor[int64](), ",timestamp(nanosecond)"
	case Int64s:
		return reflect.TypeFor[[]int64](), ",list"
	case Strings:
		return reflect.TypeFor[[]string](), ",list"
	case Uint32s:
		return reflect.TypeFor[[]uint32](), ",list"
	}
	panic("export: bad column type")
}

// Column is one column of a table.
type Column struct {
	Name     string
	Type     ColType
	Optional bool // NULL where the row has no value (a field the PDU does not carry)
	Desc     string
}

// Table is one of the exported tables: its name (the directory under
// the export directory) and its columns, in order.
type Table struct {
	Name   string
	Desc   string
	Cols   []Column
	schema *parquet.Schema
	index  map[string]int

	footerOnce sync.Once
	footer     *format.FileMetaData // what every part's footer starts from
}

// newTable builds the Parquet schema of the columns, in their order (a
// struct type made for the purpose: parquet-go's groups sort their fields
// by name, structs keep their order).
func newTable(name, desc string, cols []Column) *Table {
	fields := make([]reflect.StructField, len(cols))
	index := make(map[string]int, len(cols))
	for i, c := range cols {
		if _, dup := index[c.Name]; dup {
			panic("export: duplicate column " + name + "." + c.Name)
		}
		index[c.Name] = i
		typ, tag := c.Type.goType()
		if c.Optional {
			tag += ",optional"
		}
		fields[i] = reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: typ,
			Tag: reflect.StructTag(fmt.Sprintf(`parquet:"%s%s"`, c.Name, tag))}
	}
	st := reflect.StructOf(fields)
	schema := parquet.SchemaOf(reflect.New(st).Interface())
	return &Table{Name: name, Desc: desc, Cols: cols, schema: parquet.NewSchema(name, schema), index: index}
}

// createdBy is the footer's created_by in the form Parquet readers parse
// (parquet-mr's "NAME version VERSION (build REVISION)"): the version and
// revision --version prints.
func createdBy(in version.Info) string {
	s := "iwkit version " + in.Version
	if b := in.Build(); b != "" {
		s += " (build " + b + ")"
	}
	return s
}

// footerTemplate is the footer of an empty file of the table as
// parquet-go writes it: the schema elements (names, physical, converted
// and logical types, repetition) and column orders that every part of
// the table carries, made by the library that reads them back, so that
// they cannot drift from the schema the readers check. The part writer
// adds the row groups.
func (t *Table) footerTemplate() *format.FileMetaData {
	t.footerOnce.Do(func() {
		var buf bytes.Buffer
		w := parquet.NewWriter(&buf, t.schema, parquet.CreatedBy("iwkit", "", ""))
		if err := w.Close(); err != nil {
			panic("export: " + err.Error())
		}
		f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			panic("export: " + err.Error())
		}
		md := *f.Metadata()
		md.RowGroups, md.NumRows, md.KeyValueMetadata = nil, 0, nil
		md.CreatedBy = createdBy(version.Read())
		// The leaves, in order, are the columns as the part writer
		// writes them.
		var leaves []format.SchemaElement
		for _, se := range md.Schema[1:] {
			if !se.NumChildren.Valid || se.NumChildren.V == 0 {
				leaves = append(leaves, se)
			}
		}
		if len(leaves) != len(t.Cols) {
			panic(fmt.Sprintf("export: %s has %d leaf columns, want %d", t.Name, len(leaves), len(t.Cols)))
		}
		for i := range t.Cols {
			k := newColumn(&t.Cols[i], nil)
			if leaves[i].Type.V != k.phys || leaves[i].Name != k.path[len(k.path)-1] {
				panic(fmt.Sprintf("export: %s column %d is %s %v, want %s %v", t.Name, i, leaves[i].Name, leaves[i].Type.V, k.path, k.phys))
			}
		}
		t.footer = &md
	})
	return t.footer
}

// Column returns the index of the named column, or -1.
func (t *Table) Column(name string) int {
	if i, ok := t.index[name]; ok {
		return i
	}
	return -1
}

// Schema is the table's Parquet schema.
func (t *Table) Schema() *parquet.Schema { return t.schema }

// row builds one row, column after column in the table's order, into
// its part's columns.
type row struct {
	t   *Table
	p   *part
	col int
}

func (r *row) reset() { r.col = 0 }

// next is the column of the value being written, and moves on.
func (r *row) next() *column {
	k := r.p.cols[r.col]
	r.col++
	return k
}

// null leaves the column empty (optional columns only): nothing is
// written now, the NULLs of a column are added, as one run, before its
// next value and at the end of the row group (most fields of a PDU are
// absent).
func (r *row) null() { r.col++ }

// skip leaves the columns up to col empty.
func (r *row) skip(col int) { r.col = col }

func (r *row) bool(x bool)  { r.next().bool(r.p.inGroup, x) }
func (r *row) u32(x uint32) { r.next().int32(r.p.inGroup, x) }
func (r *row) u16(x uint16) { r.next().int32(r.p.inGroup, uint32(x)) }
func (r *row) u64(x uint64) { r.next().int64(r.p.inGroup, x) }
func (r *row) i64(x int64)  { r.next().int64(r.p.inGroup, uint64(x)) }

// bytes copies b into the page (it may alias a reassembly buffer).
func (r *row) bytes(b []byte) { r.next().byteArray(r.p.inGroup, b, false) }

func (r *row) str(s string)     { r.next().str(r.p.inGroup, s) }
func (r *row) time(t time.Time) { r.i64(t.UnixNano()) }

// timeOrNull writes t, or NULL for the zero time.
func (r *row) timeOrNull(t time.Time) {
	if t.IsZero() {
		r.null()
		return
	}
	r.time(t)
}

// frameOrNull writes a frame number, or NULL for 0 (none).
func (r *row) frameOrNull(f int) {
	if f <= 0 {
		r.null()
		return
	}
	r.i64(int64(f))
}

// strOrNull writes s, or NULL for "".
func (r *row) strOrNull(s string) {
	if s == "" {
		r.null()
		return
	}
	r.str(s)
}

// i64s, u32s and strs write a list column (a required list of required
// elements: an empty list is a single level 0).
func (r *row) i64s(xs []int) {
	k := r.next()
	k.listStart(len(xs))
	for _, x := range xs {
		k.vals = binary.LittleEndian.AppendUint64(k.vals, uint64(x))
	}
	k.listEnd(r.p.inGroup)
}

func (r *row) u32s(xs []uint32) {
	k := r.next()
	k.listStart(len(xs))
	for _, x := range xs {
		k.vals = binary.LittleEndian.AppendUint32(k.vals, x)
	}
	k.listEnd(r.p.inGroup)
}

func (r *row) strs(xs []string) {
	k := r.next()
	k.listStart(len(xs))
	for _, x := range xs {
		k.vals = binary.LittleEndian.AppendUint32(k.vals, uint32(len(x)))
		k.vals = append(k.vals, x...)
		k.unencoded += int64(len(x))
		k.byteBounds(unsafe.Slice(unsafe.StringData(x), len(x)), true)
	}
	k.listEnd(r.p.inGroup)
}

// RowGroupRows is the number of rows after which a part file's row group
// is written out: what bounds the memory of a writer (one row group's
// compressed pages, one page being built per column).
const RowGroupRows = 64 << 10

// part is one part file being written: to a hidden temporary name in its
// partition directory, renamed into place by commit. It is a Parquet
// file (parquet-format, "File format"): "PAR1", the row groups (each
// column's chunk of pages in turn), the column indexes and offset
// indexes (PageIndex.md), the footer (FileMetaData, Thrift compact), its
// length, "PAR1".
type part struct {
	t        *Table
	f        *os.File
	w        *bufio.Writer
	off      int64 // octets written
	tmp, dir string
	lock     *os.File // held on tmp until commit or abort (lockTemp)
	capture  string
	rows     int64
	inGroup  int
	cols     []*column
	groups   []format.RowGroup
	indexes  [][2][]byte // column and offset index of each chunk, row group after row group
	dictBuf  []byte
	err      error
}

// magic begins and ends a Parquet file.
const magic = "PAR1"

// newPart creates table t's part of a capture set under its temporary
// name, .part-<writer>.parquet.tmp, and locks it.
func newPart(t *Table, dir, capture, writer string) (*part, error) {
	pdir := filepath.Join(dir, t.Name, "capture="+capture)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return nil, err
	}
	t.footerTemplate()
	p := &part{t: t, dir: pdir, tmp: filepath.Join(pdir, ".part-"+writer+".parquet.tmp"), capture: capture}
	buf := &pageBufs{}
	for i := range t.Cols {
		p.cols = append(p.cols, newColumn(&t.Cols[i], buf))
	}
	f, err := os.OpenFile(p.tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	p.f = f
	if p.lock, err = lockTemp(p.tmp); err != nil {
		f.Close()
		os.Remove(p.tmp)
		return nil, err
	}
	p.w = bufio.NewWriterSize(f, 64<<10)
	p.put([]byte(magic))
	return p, nil
}

// put writes b to the file; the first error sticks.
func (p *part) put(b []byte) {
	n, err := p.w.Write(b)
	p.off += int64(n)
	if err != nil && p.err == nil {
		p.err = err
	}
}

// write ends a row.
func (p *part) write(r *row) {
	if r.col != len(p.t.Cols) {
		panic(fmt.Sprintf("export: %s row has %d columns, want %d", p.t.Name, r.col, len(p.t.Cols)))
	}
	p.rows++
	if p.inGroup++; p.inGroup >= RowGroupRows {
		p.flushGroup()
	}
}

// flushGroup writes the row group: each column's chunk, its metadata
// kept for the footer, its indexes for the end of the file.
func (p *part) flushGroup() {
	if p.inGroup == 0 {
		return
	}
	rg := format.RowGroup{NumRows: int64(p.inGroup), FileOffset: p.off, Ordinal: int16(len(p.groups))}
	for _, k := range p.cols {
		k.endRowGroup(p.inGroup)
		start := p.off
		dict, dictSize := k.appendDictPage(p.dictBuf[:0])
		p.dictBuf = dict
		p.put(dict)
		p.put(k.chunk)
		md := format.ColumnMetaData{
			Type:                  k.phys,
			Encoding:              []format.Encoding{format.Plain},
			PathInSchema:          k.path,
			Codec:                 format.Snappy,
			NumValues:             k.chunkValues,
			TotalUncompressedSize: k.uncompressed,
			TotalCompressedSize:   int64(len(dict) + len(k.chunk)),
			DataPageOffset:        start + int64(len(dict)),
			Statistics:            format.Statistics{NullCount: k.chunkNulls},
		}
		if len(dict) > 0 {
			md.DictionaryPageOffset = start
			md.TotalUncompressedSize += int64(dictSize)
			md.EncodingStats = append(md.EncodingStats, format.PageEncodingStats{PageType: format.DictionaryPage, Encoding: format.Plain, Count: 1},
				format.PageEncodingStats{PageType: format.DataPageV2, Encoding: format.RLEDictionary, Count: int32(k.dictPages)})
		}
		if k.plainPages > 0 {
			md.EncodingStats = append(md.EncodingStats, format.PageEncodingStats{PageType: format.DataPageV2, Encoding: format.Plain, Count: int32(k.plainPages)})
		}
		if k.dictPages > 0 {
			md.Encoding = append(md.Encoding, format.RLEDictionary)
		}
		if k.maxDef != 0 {
			md.Encoding = append(md.Encoding, format.RLE)
			md.SizeStatistics.DefinitionLevelHistogram = k.defHist[:]
		}
		if k.list {
			md.SizeStatistics.RepetitionLevelHistogram = k.repHist[:]
		}
		if k.phys == format.ByteArray {
			md.SizeStatistics.UnencodedByteArrayDataBytes = k.unencoded
		}
		if k.hasBounds {
			md.Statistics.MinValue, md.Statistics.MaxValue = bytes.Clone(k.min), bytes.Clone(k.max)
		}
		rg.Columns = append(rg.Columns, format.ColumnChunk{MetaData: md})
		rg.TotalByteSize += md.TotalUncompressedSize
		rg.TotalCompressedSize += md.TotalCompressedSize

		var ci format.ColumnIndex
		var oi format.OffsetIndex
		for _, pg := range k.pages {
			ci.NullPages = append(ci.NullPages, pg.allNull)
			ci.MinValues = append(ci.MinValues, pg.min)
			ci.MaxValues = append(ci.MaxValues, pg.max)
			ci.NullCounts = append(ci.NullCounts, pg.nulls)
			if k.maxDef != 0 {
				ci.DefinitionLevelHistogram = append(ci.DefinitionLevelHistogram, pg.defHist[:]...)
			}
			if k.list {
				ci.RepetitionLevelHistogram = append(ci.RepetitionLevelHistogram, pg.repHist[:]...)
			}
			oi.PageLocations = append(oi.PageLocations, format.PageLocation{Offset: start + int64(len(dict)+pg.off), CompressedPageSize: pg.size, FirstRowIndex: pg.first})
		}
		cb, err := thrift.Marshal(new(thrift.CompactProtocol), &ci)
		if err == nil {
			var ob []byte
			ob, err = thrift.Marshal(new(thrift.CompactProtocol), &oi)
			p.indexes = append(p.indexes, [2][]byte{cb, ob})
		}
		if err != nil && p.err == nil {
			p.err = err
		}
		k.resetChunk()
	}
	p.groups = append(p.groups, rg)
	p.inGroup = 0
}

// close finishes the file under its temporary name.
func (p *part) close() error {
	if p.f == nil {
		return p.err
	}
	p.flushGroup()
	// The column indexes, then the offset indexes, each chunk's pointed
	// at by its ColumnChunk (PageIndex.md).
	for w := range 2 {
		n := 0
		for g := range p.groups {
			for c := range p.groups[g].Columns {
				b := p.indexes[n][w]
				n++
				cc := &p.groups[g].Columns[c]
				if w == 0 {
					cc.ColumnIndexOffset, cc.ColumnIndexLength = p.off, int32(len(b))
				} else {
					cc.OffsetIndexOffset, cc.OffsetIndexLength = p.off, int32(len(b))
				}
				p.put(b)
			}
		}
	}
	md := *p.t.footerTemplate()
	md.NumRows = p.rows
	md.RowGroups = p.groups
	md.KeyValueMetadata = []format.KeyValue{{Key: "iwkit.capture", Value: p.capture}, {Key: "iwkit.table", Value: p.t.Name}}
	fb, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	if err != nil && p.err == nil {
		p.err = err
	}
	p.put(fb)
	p.put(binary.LittleEndian.AppendUint32(nil, uint32(len(fb))))
	p.put([]byte(magic))
	err = p.err
	if e := p.w.Flush(); err == nil {
		err = e
	}
	if e := p.f.Sync(); err == nil {
		err = e
	}
	if e := p.f.Close(); err == nil {
		err = e
	}
	p.f, p.w, p.cols, p.groups, p.indexes = nil, nil, nil, nil, nil // the buffers go now
	return err
}

// commit renames the finished file to part-<id>.parquet: readers see all
// of it or nothing of it.
func (p *part) commit(id string) error {
	err := os.Rename(p.tmp, filepath.Join(p.dir, "part-"+id+".parquet"))
	p.unlock()
	return err
}

func (p *part) unlock() {
	if p.lock != nil {
		p.lock.Close()
		p.lock = nil
	}
}

// abort closes and removes the temporary file.
func (p *part) abort() {
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
	os.Remove(p.tmp)
	p.unlock()
}

// fieldColumn is the column name of a field-table name: dots become
// underscores, which every engine takes unquoted.
func fieldColumn(name string) string { return strings.ReplaceAll(name, ".", "_") }
