package export

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
)

// Row is a row read back from a part file: column name to value. Values
// are bool, uint64 (unsigned columns), int64, string, hex string (binary
// columns), time.Time (UTC), []int64, []string or []uint64 (unsigned
// lists); NULLs are absent.
type Row map[string]any

// ReadTable reads every row of table t in dir, the live copy of every
// capture set (LiveParts), ordered by capture set and then as written;
// each row has its capture set under "capture", as engines read the
// Hive partition. It is the export's own reader, for tests and tools
// that want no SQL engine.
func ReadTable(dir string, t *Table) ([]Row, error) {
	live, skipped := LiveParts(dir, "")
	if len(skipped) > 0 {
		return nil, errors.New(skipped[0])
	}
	parts := live[t]
	slices.Sort(parts)
	var rows []Row
	for _, p := range parts {
		capture := strings.TrimPrefix(filepath.Base(filepath.Dir(p)), "capture=")
		rs, err := readPart(p, t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, r := range rs {
			r["capture"] = capture
		}
		rows = append(rows, rs...)
	}
	return rows, nil
}

func readPart(path string, t *Table) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := parquet.NewReader(f)
	defer r.Close()
	if got := r.Schema(); !schemaPrefix(got, t.schema) {
		return nil, fmt.Errorf("schema differs from table %s:\n%s", t.Name, got)
	}
	var out []Row
	buf := make([]parquet.Row, 64)
	for {
		n, err := r.ReadRows(buf)
		for _, pr := range buf[:n] {
			out = append(out, t.decodeRow(pr))
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

func (t *Table) decodeRow(pr parquet.Row) Row {
	row := Row{}
	for _, v := range pr {
		c := &t.Cols[v.Column()]
		if v.IsNull() {
			if c.Type == Int64s {
				row[c.Name] = []int64{}
			}
			if c.Type == Strings {
				row[c.Name] = []string{}
			}
			if c.Type == Uint32s {
				row[c.Name] = []uint64{}
			}
			continue
		}
		switch c.Type {
		case Bool:
			row[c.Name] = v.Boolean()
		case Uint8, Uint16, Uint32:
			row[c.Name] = uint64(uint32(v.Int32()))
		case Uint64:
			row[c.Name] = uint64(v.Int64())
		case Int64:
			row[c.Name] = v.Int64()
		case String:
			row[c.Name] = string(v.ByteArray())
		case Bytes:
			row[c.Name] = hex.EncodeToString(v.ByteArray())
		case Time:
			row[c.Name] = time.Unix(0, v.Int64()).UTC()
		case Int64s:
			l, _ := row[c.Name].([]int64)
			row[c.Name] = append(l, v.Int64())
		case Strings:
			l, _ := row[c.Name].([]string)
			row[c.Name] = append(l, string(v.ByteArray()))
		case Uint32s:
			l, _ := row[c.Name].([]uint64)
			row[c.Name] = append(l, uint64(uint32(v.Int32())))
		}
	}
	return row
}
