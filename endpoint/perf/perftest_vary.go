package perf

import (
	"strconv"
)

// What of perftest's -R exchange differs from run to run (perftest_comm.go
// owns the layout): for a replay of a perftest capture, which compares
// what a live peer sends with what the capture holds (iwreplay --mask
// perftest).

// IsPerftestVersion reports whether b is perftest's first control record:
// its version, 16 octets of NUL-padded text such as "6.06".
func IsPerftestVersion(b []byte) bool {
	if len(b) != ptVersionLen {
		return false
	}
	v := string(b)
	if i := indexNUL(b); i >= 0 {
		v = v[:i]
	}
	_, err := strconv.ParseFloat(v, 64)
	return err == nil && v != ""
}

// PerftestDestVarying returns the octet ranges [from, to) of a
// pingpong_dest record (56 octets) that differ every run or every host:
// qpn, psn (random), rkey, the padding after it (perftest sends it
// uninitialised), vaddr (the registration) and the gid (from the host's
// MAC address). nil when b is not one.
func PerftestDestVarying(b []byte) [][2]int {
	if len(b) != ptDestLen {
		return nil
	}
	return [][2]int{{8, 12}, {12, 16}, {16, 20}, {20, 24}, {24, 32}, {32, 48}}
}

// PerftestReportVarying says whether field k (from 0) of a bandwidth
// report (xchg_bw_reports: five 8-octet Sends: size, iterations, BW peak,
// BW average, MsgRate) differs every run: the measurements, and on the
// server's side all five (perftest's server sends its report struct
// unfilled: stack contents, testdata/siw/ib_write_bw_4096.pcap frames
// 69-77).
func PerftestReportVarying(k int, server bool) bool { return k < 5 && (server || k >= 2) }

// PerftestReportFieldLen is the size of each of the report's Sends.
const PerftestReportFieldLen = 8
