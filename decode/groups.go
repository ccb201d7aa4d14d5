package decode

// FieldGroups are the runs of fields that the specialized writers write
// with straight-line code (render's NDJSON fast path, export's Parquet
// pdus writer): each a run of consecutive fields of the table, in table
// order, that share one presence condition, so a PDU carries all of a
// group or none. A PDU kind whose fields are a sequence of groups takes
// the fast path; MPA frames and Terminates are left to the table walk.
// Each writer gives one function per group, in this order; the groups are
// listed here once so that a change of the table (a field added, a
// condition split) is made in one place and the tests of both writers
// see it.
var FieldGroups = [][]string{
	{"mpa.ulpdu_length", "mpa.pad", "mpa.crc"},
	{"mpa.crc_computed"},
	{"mpa.crc_status", "mpa.markers"},
	{"ddp.tagged", "ddp.last", "ddp.rsvd", "ddp.dv"},
	{"ddp.stag", "ddp.to"},
	{"ddp.rsvdulp", "ddp.qn", "ddp.msn", "ddp.mo"},
	{"ddp.payload_length"},
	{"rdmap.rv", "rdmap.rsv", "rdmap.opcode"},
	{"rdmap.inval_stag"},
	{"rdmap.sink_stag", "rdmap.sink_to", "rdmap.read_size", "rdmap.src_stag", "rdmap.src_to"},
	{"rdmap.imm_data"},
	{"rdmap.atomic.opcode", "rdmap.atomic.request_id", "rdmap.atomic.remote_stag", "rdmap.atomic.remote_to",
		"rdmap.atomic.add_swap_data", "rdmap.atomic.add_swap_mask", "rdmap.atomic.compare_data", "rdmap.atomic.compare_mask"},
	{"rdmap.atomic.orig_request_id", "rdmap.atomic.orig_value"},
	{"rdmap.pre_ietf", "rdmap.extension"},
}
