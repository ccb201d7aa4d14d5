// Package export writes what the analysis pipeline recovers as Parquet
// tables in a Hive-style layout, for DuckDB (cmd/iwsql), Spark, Trino and
// ClickHouse:
//
//	DIR/<table>/capture=<name>/part-<id>.parquet
//
// Tables: connections, pdus (the field table's fields as columns),
// operations (with Terminates and the frame they blame), findings,
// commands (the storage-protocol commands, analyze.KindCommand), and
// captures (one row per capture set). The schema is a contract (README
// "Export"); Tables lists it and TestSchemaDoc holds the README to it.
//
// An Exporter is an analyze.Consumer of one capture set. Its part files
// are written under hidden temporary names and renamed into place when
// the set is finished, so several processes, on several machines, may
// export into one directory at once; readers see a part whole or not at
// all. Row groups are flushed every RowGroupRows rows: memory stays
// bounded whatever the capture's size.
//
// Writing is pure Go (github.com/parquet-go/parquet-go): iwdump stays a
// static binary without cgo.
package export
