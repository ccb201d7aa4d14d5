// Package render turns the pipeline's records (package analyze) into what
// iwdump prints: the text summary line, the -V field tree, the -x hex
// dump, NDJSON (one object per PDU or finding, nested by the field table's
// dotted names), and the -z statistics tables. A Printer is an
// analyze.Consumer. Field names and JSON keys come from the one field
// table (decode.Fields) and are a contract (README).
package render
