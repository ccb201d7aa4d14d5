package export

import (
	"os"
	"path/filepath"
	"strings"
)

// ViewSQL is the DuckDB statement that makes table t of the export in dir
// a view of the same name: every part of every capture set, the capture
// name read from the Hive partition as a VARCHAR (DuckDB would guess a
// number for a name like "17"), columns matched by name so that parts
// written before a column was added still read. It returns "" when the
// table has no part yet (read_parquet refuses an empty glob).
func ViewSQL(dir string, t *Table) string {
	glob := filepath.Join(dir, t.Name, "capture=*", "part-*.parquet")
	if m, _ := filepath.Glob(glob); len(m) == 0 {
		return ""
	}
	return "CREATE OR REPLACE VIEW " + t.Name + " AS SELECT * FROM read_parquet(" + sqlString(glob) +
		", hive_partitioning = true, hive_types = {'capture': VARCHAR}, union_by_name = true)"
}

// IsExport reports whether dir looks like an export directory.
func IsExport(dir string) bool {
	for _, t := range Tables {
		if st, err := os.Stat(filepath.Join(dir, t.Name)); err == nil && st.IsDir() {
			return true
		}
	}
	return false
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
