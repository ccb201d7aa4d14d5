// Package export writes what the analysis pipeline recovers as Parquet
// tables in a Hive-style layout, for DuckDB (cmd/iwsql), Spark, Trino and
// ClickHouse:
//
//	DIR/<table>/capture=<name>/part-<id>.parquet
//
// Tables: connections, pdus (the field table's fields as columns),
// operations (with Terminates and the frame they blame), findings,
// commands (the storage-protocol commands, analyze.KindCommand), and
// captures (one row per capture set). The schema is a contract (docs/parquet.md);
// Tables lists it and TestSchemaDoc holds docs/parquet.md to it.
//
// An Exporter is an analyze.Consumer of one capture set. Its part files
// are written under hidden temporary names and renamed into place when
// the set is finished, the captures part last: that rename commits the
// set, and of a set's commits the greatest is the live copy (lake.go).
// Several processes, on several machines, may export into one directory
// at once, retry, die, or have their directories merged; readers
// (LiveParts, iwsql) see the live copy of each set only. Row groups are flushed every RowGroupRows rows: memory stays
// bounded whatever the capture's size.
//
// Writing is pure Go: iwdump stays a static binary without cgo. The part
// files are written by this package (table.go, column.go, levels.go):
// each column's values PLAIN-encoded as they come, its definition levels
// as runs (a column absent from a row costs nothing per row), data pages
// v2 with Snappy, column and offset indexes. github.com/parquet-go/parquet-go
// gives the Thrift structures of the footer and indexes, the schema
// elements (a template file of each table, so the schema is the one its
// reader checks), and reads the files back (ReadTable).
package export
