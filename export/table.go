package export

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"
	"unsafe"

	"github.com/parquet-go/parquet-go"
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

// SQL names the type as DuckDB shows it: what the README's schema lists.
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
	def    []uint8         // definition level of a value, by column
	nulls  []parquet.Value // the NULL of each column
	// nullRuns are batchRows NULLs of each optional column: what a batch
	// hands the column writer for a column none of its rows has (most
	// of the field-table columns of most PDUs), without building it.
	nullRuns [][]parquet.Value
	// bools are each column's false and true, levelled: a boolean column
	// has two values, made once.
	bools [][2]parquet.Value
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
	t := &Table{Name: name, Desc: desc, Cols: cols, schema: parquet.NewSchema(name, schema), index: index}
	for i, c := range cols {
		var def uint8
		if c.Optional {
			def = 1
		}
		t.def = append(t.def, def)
		t.nulls = append(t.nulls, parquet.Value{}.Level(0, 0, i))
		var run []parquet.Value
		if c.Optional {
			run = make([]parquet.Value, batchRows)
			for k := range run {
				run[k] = t.nulls[i]
			}
		}
		t.nullRuns = append(t.nullRuns, run)
		t.bools = append(t.bools, [2]parquet.Value{
			parquet.BooleanValue(false).Level(0, int(def), i), parquet.BooleanValue(true).Level(0, int(def), i)})
	}
	return t
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
// its part's column batches.
type row struct {
	t   *Table
	p   *part
	col int
}

func (r *row) reset() { r.col = 0 }

func (r *row) put(v parquet.Value) {
	// A required column's value needs no levels: its definition and
	// repetition levels are 0, the zero Value's, and the column writer
	// puts it in its own column whatever its column index.
	if def := r.t.def[r.col]; def != 0 {
		v = v.Level(0, int(def), r.col)
	}
	r.putLevelled(v)
}

// putLevelled appends v, whose levels are already set.
func (r *row) putLevelled(v parquet.Value) {
	p, c := r.p, r.col
	p.fill(c)
	p.batch[c] = append(p.batch[c], v)
	p.rowsIn[c]++
	r.col++
}

// null leaves the column empty (optional columns only): nothing is
// written now, the NULLs of a column are filled in before its next value
// and at the end of the batch (most fields of a PDU are absent).
func (r *row) null() { r.col++ }

// skip leaves the columns up to col empty.
func (r *row) skip(col int) { r.col = col }

func (r *row) bool(x bool) {
	var i int
	if x {
		i = 1
	}
	r.putLevelled(r.t.bools[r.col][i])
}
func (r *row) u32(x uint32) { r.put(parquet.Int32Value(int32(x))) }
func (r *row) u16(x uint16) { r.put(parquet.Int32Value(int32(x))) }
func (r *row) u64(x uint64) { r.put(parquet.Int64Value(int64(x))) }
func (r *row) i64(x int64)  { r.put(parquet.Int64Value(x)) }

// bytes copies b (it may alias a reassembly buffer) until the batch is
// written.
func (r *row) bytes(b []byte) {
	a := &r.p.arena
	n := len(*a)
	*a = append(*a, b...)
	r.put(parquet.ByteArrayValue((*a)[n:len(*a):len(*a)]))
}

// str keeps a reference to s (the value points at its octets).
func (r *row) str(s string) {
	r.put(parquet.ByteArrayValue(unsafe.Slice(unsafe.StringData(s), len(s))))
}
func (r *row) time(t time.Time) { r.put(parquet.Int64Value(t.UnixNano())) }

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

// i64s writes a list column (required list of required elements: an
// empty list is a single value at definition level 0).
func (r *row) i64s(xs []int) {
	r.list(len(xs), func(i int) parquet.Value { return parquet.Int64Value(int64(xs[i])) })
}

func (r *row) u32s(xs []uint32) {
	r.list(len(xs), func(i int) parquet.Value { return parquet.Int32Value(int32(xs[i])) })
}

func (r *row) strs(xs []string) {
	r.list(len(xs), func(i int) parquet.Value { return parquet.ByteArrayValue([]byte(xs[i])) })
}

// list writes a list column of n elements, element i being v(i).
func (r *row) list(n int, v func(i int) parquet.Value) {
	r.p.fill(r.col)
	r.p.rowsIn[r.col]++
	c := &r.p.batch[r.col]
	if n == 0 {
		*c = append(*c, parquet.Value{}.Level(0, 0, r.col))
	}
	for i := 0; i < n; i++ {
		*c = append(*c, v(i).Level(min(i, 1), 1, r.col))
	}
	r.col++
}

// RowGroupRows is the number of rows after which a part file's row group
// is flushed: what bounds the memory of a writer (the column buffers of
// one row group, compressed pages until the flush).
const RowGroupRows = 64 << 10

// part is one part file being written: to a hidden temporary name in its
// partition directory, renamed into place by commit.
type part struct {
	t          *Table
	f          *os.File
	w          *parquet.Writer
	tmp, final string
	rows       int64
	inGroup    int
	// batch holds each column's values of the rows not yet handed to the
	// column writers (column by column: far cheaper than row by row);
	// arena the octets they point at.
	batch   [][]parquet.Value
	rowsIn  []int // rows of the batch each column has values for
	inBatch int
	arena   []byte
	err     error
}

// batchRows is the number of rows handed to the column writers at once.
const batchRows = 256

func newPart(t *Table, dir, capture, name string) (*part, error) {
	pdir := filepath.Join(dir, t.Name, "capture="+capture)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return nil, err
	}
	p := &part{t: t, final: filepath.Join(pdir, name+".parquet"), tmp: filepath.Join(pdir, "."+name+".parquet.tmp"),
		batch: make([][]parquet.Value, len(t.Cols)), rowsIn: make([]int, len(t.Cols))}
	f, err := os.OpenFile(p.tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	p.f = f
	p.w = parquet.NewWriter(f, t.schema,
		parquet.Compression(&fastSnappy{}),
		// 64 KiB pages: fewer page headers, column-index entries and
		// Snappy calls than 16 KiB ones for a few MiB more of buffers
		// (BENCHMARKS.md, "Export speed, issue 19").
		parquet.PageBufferSize(64<<10),
		// No statistics in the page headers: the column index (what
		// engines prune pages by) and the chunk statistics keep them.
		parquet.DataPageStatistics(false),
		parquet.CreatedBy("iwkit", "", ""),
		parquet.KeyValueMetadata("iwkit.table", t.Name),
		parquet.KeyValueMetadata("iwkit.capture", capture))
	return p, nil
}

// write ends a row; the first error sticks and is returned by close.
func (p *part) write(r *row) {
	if r.col != len(p.t.Cols) {
		panic(fmt.Sprintf("export: %s row has %d columns, want %d", p.t.Name, r.col, len(p.t.Cols)))
	}
	p.rows++
	if p.inBatch++; p.inBatch >= batchRows {
		p.flushBatch()
	}
	if p.inGroup++; p.inGroup >= RowGroupRows {
		p.inGroup = 0
		p.flushBatch()
		if p.err == nil {
			p.err = p.w.Flush()
		}
	}
}

// fill appends the NULLs column col lacks for the rows before the
// current one.
func (p *part) fill(col int) {
	if n := p.inBatch - p.rowsIn[col]; n > 0 {
		null := p.t.nulls[col]
		b := p.batch[col]
		for range n {
			b = append(b, null)
		}
		p.batch[col], p.rowsIn[col] = b, p.inBatch
	}
}

// flushBatch hands the batched values to the column writers, which copy
// them.
func (p *part) flushBatch() {
	if p.inBatch == 0 {
		return
	}
	for i, cw := range p.w.ColumnWriters() {
		vals := p.batch[i]
		if p.rowsIn[i] == 0 && p.t.nullRuns[i] != nil {
			vals = p.t.nullRuns[i][:p.inBatch] // NULL on every row of the batch
		} else {
			p.fill(i)
			vals = p.batch[i]
		}
		p.rowsIn[i] = 0
		if p.err == nil {
			_, p.err = cw.WriteRowValues(vals)
		}
		clear(p.batch[i]) // drop the references
		p.batch[i] = p.batch[i][:0]
	}
	p.inBatch = 0
	p.arena = p.arena[:0]
}

// close finishes the file under its temporary name.
func (p *part) close() error {
	if p.f == nil {
		return p.err
	}
	p.flushBatch()
	err := p.err
	if e := p.w.Close(); err == nil {
		err = e
	}
	if e := p.f.Sync(); err == nil {
		err = e
	}
	if e := p.f.Close(); err == nil {
		err = e
	}
	p.f = nil
	return err
}

// commit renames the finished file into place: readers see all of it or
// nothing of it.
func (p *part) commit() error { return os.Rename(p.tmp, p.final) }

// abort closes and removes the temporary file.
func (p *part) abort() {
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
	os.Remove(p.tmp)
}

// fieldColumn is the column name of a field-table name: dots become
// underscores, which every engine takes unquoted.
func fieldColumn(name string) string { return strings.ReplaceAll(name, ".", "_") }
