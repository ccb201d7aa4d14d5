// Package render turns the pipeline's records (package analyze) into what
// iwdump prints: the text summary line, the -V field tree, the -x hex
// dump, NDJSON (one object per PDU or finding, nested by the field table's
// dotted names), and the -z statistics tables. A Printer is an
// analyze.Consumer. Field names and JSON keys come from the one field
// table (decode.Fields) and are a contract (docs/json.md, docs/fields.md).
//
// It owns a PDU's detail tree (tree.go): AppendNodes builds it once as
// structured nodes (field name, value and description from the field
// tables, octet range, linked frame, severity), -V prints its field nodes,
// and iwtui draws every node and lights up their octets.
package render
