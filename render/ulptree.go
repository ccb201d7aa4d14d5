package render

import "github.com/iwkit/iwkit/ulp"

// AppendULPTree writes the -V tree of a storage-protocol message, as
// iwdump -V prints it under the PDU's fields: one field a line, indented
// four spaces per level of its dotted name, with its description in
// parentheses. iwtui's detail tree shows the same lines.
func AppendULPTree(b []byte, m *ulp.Message, numeric bool) []byte {
	return appendULPTree(b, m, numeric)
}
