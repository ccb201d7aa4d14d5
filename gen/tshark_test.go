package gen

import (
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/internal/oracle"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
)

// The differential round trip: Wireshark's iWARP dissectors (the oracle)
// decode the generated captures, and every FPDU they show must equal the
// truth. tshark can decode where it has seen the MPA handshake and every
// segment starts with an FPDU (it assumes one FPDU per segment, reference
// §5 item 3), so these scenarios have the handshake, one FPDU per segment
// and no impairment.

// tsharkFields are the fields compared; the row starts with frame.number.
var tsharkFields = []string{
	"iwarp_mpa.ulpdulength", "iwarp_mpa.crc", "iwarp_mpa.crc_check", "iwarp_mpa.marker_fpduptr",
	"iwarp_ddp.tagged_flag", "iwarp_ddp.last_flag", "iwarp_ddp.dv", "iwarp_ddp.stag", "iwarp_ddp.tagged_offset",
	"iwarp_ddp.qn", "iwarp_ddp.msn", "iwarp_ddp.mo",
	"iwarp_rdma.version", "iwarp_rdma.opcode", "iwarp_rdma.inval_stag",
	"iwarp_rdma.sinkstag", "iwarp_rdma.sinkto", "iwarp_rdma.rdmardsz", "iwarp_rdma.srcstag", "iwarp_rdma.srcto",
	"iwarp_rdma.term_layer", "iwarp_rdma.term_etype_rdma", "iwarp_rdma.term_etype_ddp", "iwarp_rdma.term_etype_llp",
	"iwarp_rdma.term_errcode_rdma", "iwarp_rdma.term_errcode_ddp_tagged", "iwarp_rdma.term_errcode_ddp_untagged",
	"iwarp_rdma.term_errcode_llp", "iwarp_rdma.term_etype", "iwarp_rdma.term_errcode", "iwarp_rdma.term_hdrct_m", "iwarp_rdma.hdrct_d", "iwarp_rdma.hdrct_r",
	"iwarp_rdma.term_ddp_seg_len",
	"iwarp_rdma.atomic.opcode", "iwarp_rdma.atomic.request_identifier", "iwarp_rdma.atomic.remote_stag",
	"iwarp_rdma.atomic.remote_tagged_offset", "iwarp_rdma.atomic.add_data", "iwarp_rdma.atomic.add_mask",
	"iwarp_rdma.atomic.swap_data", "iwarp_rdma.atomic.swap_mask", "iwarp_rdma.atomic.compare_data",
	"iwarp_rdma.atomic.compare_mask", "iwarp_rdma.atomic.original_request_identifier",
	"iwarp_rdma.atomic.original_remote_data_value",
}

// tsharkRows runs tshark and returns, per frame, field → values.
func tsharkRows(t *testing.T, file string) oracle.Rows {
	return oracle.Fields(t, file, "iwarp_ddp", tsharkFields...)
}

// tsNumber reads a tshark value: decimal, 0x-hex, a boolean word, or hex
// octets (FT_BYTES).
func tsNumber(s string) (uint64, error) {
	switch s {
	case "True", "true":
		return 1, nil
	case "False", "false":
		return 0, nil
	}
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		return strconv.ParseUint(h, 16, 64)
	}
	return strconv.ParseUint(s, 10, 64)
}

// expectFields lists what tshark must show for the FPDU: field → value.
func expectFields(f *FPDUTruth, crc bool) map[string]uint64 {
	m := map[string]uint64{
		"iwarp_mpa.ulpdulength": uint64(f.ULPDULength),
		"iwarp_ddp.tagged_flag": uint64(b2i(f.Tagged)),
		"iwarp_ddp.last_flag":   uint64(b2i(f.Last)),
		"iwarp_ddp.dv":          uint64(f.DV),
		"iwarp_rdma.version":    uint64(f.RV),
		"iwarp_rdma.opcode":     uint64(f.Opcode),
	}
	if crc {
		// tshark shows a good CRC as crc_check, and reads the four octets
		// as a big-endian number while the value goes least significant
		// octet first (RFC 5044 §4.4): compare the octet-swapped value.
		m["iwarp_mpa.crc_check"] = uint64(bits.ReverseBytes32(f.CRC))
	} else {
		m["iwarp_mpa.crc"] = uint64(f.CRC)
	}
	if f.Tagged {
		m["iwarp_ddp.stag"], m["iwarp_ddp.tagged_offset"] = uint64(f.STag), f.TO
	} else {
		m["iwarp_ddp.qn"], m["iwarp_ddp.msn"], m["iwarp_ddp.mo"] = uint64(f.QN), uint64(f.MSN), uint64(f.MO)
	}
	if decode.Opcode(f.Opcode) == decode.OpSendInv || decode.Opcode(f.Opcode) == decode.OpSendSEInv {
		m["iwarp_rdma.inval_stag"] = uint64(f.InvSTag)
	}
	if r := f.Read; r != nil {
		m["iwarp_rdma.sinkstag"], m["iwarp_rdma.sinkto"], m["iwarp_rdma.rdmardsz"] = uint64(r.SinkSTag), r.SinkTO, uint64(r.Size)
		m["iwarp_rdma.srcstag"], m["iwarp_rdma.srcto"] = uint64(r.SrcSTag), r.SrcTO
	}
	if tm := f.Term; tm != nil {
		m["iwarp_rdma.term_layer"] = uint64(tm.Layer)
		m["iwarp_rdma.term_etype"] = uint64(tm.EType) // one of the per-layer fields
		m["iwarp_rdma.term_errcode"] = uint64(tm.Code)
		m["iwarp_rdma.term_hdrct_m"], m["iwarp_rdma.hdrct_d"], m["iwarp_rdma.hdrct_r"] = uint64(b2i(tm.M)), uint64(b2i(tm.D)), uint64(b2i(tm.R))
		if tm.D {
			m["iwarp_rdma.term_ddp_seg_len"] = uint64(tm.SegLen)
		}
	}
	if a := f.AtomicReq; a != nil {
		m["iwarp_rdma.atomic.opcode"] = uint64(a.AOpCode)
		m["iwarp_rdma.atomic.request_identifier"] = uint64(a.RequestID)
		m["iwarp_rdma.atomic.remote_stag"] = uint64(a.RemoteSTag)
		m["iwarp_rdma.atomic.remote_tagged_offset"] = a.RemoteTO
		if a.AOpCode == uint8(decode.AOpCmpSwap) {
			m["iwarp_rdma.atomic.swap_data"], m["iwarp_rdma.atomic.swap_mask"] = a.AddSwapData, a.AddSwapMask
			m["iwarp_rdma.atomic.compare_data"], m["iwarp_rdma.atomic.compare_mask"] = a.CompareData, a.CompareMask
		} else {
			m["iwarp_rdma.atomic.add_data"], m["iwarp_rdma.atomic.add_mask"] = a.AddSwapData, a.AddSwapMask
		}
	}
	if a := f.AtomicResp; a != nil {
		m["iwarp_rdma.atomic.original_request_identifier"] = uint64(a.OrigRequestID)
		m["iwarp_rdma.atomic.original_remote_data_value"] = a.OrigValue
	}
	return m
}

// tsharkValue finds a field in a row; the Terminate's EType and Code live
// in per-layer fields.
func tsharkValue(row map[string][]string, field string) (string, bool) {
	if v, ok := row[field]; ok {
		return v[0], true
	}
	if field == "iwarp_rdma.term_etype" || field == "iwarp_rdma.term_errcode" {
		for k, v := range row {
			if strings.HasPrefix(k, field+"_") {
				return v[0], true
			}
		}
	}
	return "", false
}

// markerScenarios have markers in both directions. tshark 4.0 computes the
// wire length of a marked FPDU wrongly when a marker falls right after its
// CRC (it then waits for more octets and decodes nothing further in that
// direction), so for these only the FPDUs tshark decodes are compared, and
// their markers with them.
var markerScenarios = map[string]bool{"markers-both": true}

func tsharkScenarios(t *testing.T) map[string]*Scenario {
	v6 := &Scenario{Connections: []Connection{{Client: "[2001:db8::10]:41000", Server: "[2001:db8::20]:4791", VLAN: 100, Timestamps: true,
		MSS: 8960, MPA: MPA{CRC: true, Rev: ptr(2), IRD: ptr[uint16](2), ORD: ptr[uint16](2), ReplyIRD: ptr[uint16](2), ReplyORD: ptr[uint16](2)},
		Ops: []Op{{Op: OpNameWrite, Size: 30000}, {Op: OpNameRead, Dir: "r2i", Size: 20000}, {Op: OpNameSendInv, InvSTag: 0x77, Size: 9000}}}}}
	v1 := &Scenario{Connections: []Connection{{MSS: 536, MPA: MPA{Rev: ptr(1), RequestData: Data("ulp private data")},
		Ops: []Op{{Op: OpNameSend, Size: 3000}, {Op: OpNameWrite, Size: 3000, Dir: "r2i"}, {Op: OpNameRead, Size: 2000}}}}}
	wrap := &Scenario{Connections: []Connection{{ClientISN: ptr[uint32](0xFFFFF800), ServerISN: ptr[uint32](0xFFFFFFFF),
		MPA: MPA{CRC: true}, Ops: []Op{{Op: OpNameSend, Size: 8000}, {Op: OpNameWrite, Dir: "r2i", Size: 8000}}}}}
	multi := mustBuiltin(t, "bulk-write", Params{Seed: 3, Count: 4, Conns: 3, Size: 20000})
	send := []Op{{Op: OpNameSend, Size: 300}, {Op: OpNameRead, Dir: "r2i", Size: 2000}}
	variants := &Scenario{Connections: []Connection{
		{MPA: MPA{Rev: ptr(0), CRC: true}, Ops: send}, // RDMA Consortium MPA, DV/RV 0
		{MPA: MPA{Rev: ptr(2), RTR: "read", IRD: ptr[uint16](1), ORD: ptr[uint16](1), ReplyIRD: ptr[uint16](1), ReplyORD: ptr[uint16](1)}, Ops: send},
		{MPA: MPA{Rev: ptr(2), RTR: "send", CRC: true}, Ops: send},
		{MPA: MPA{Rev: ptr(2), RTR: "write", ReplyData: Data("p2p")}, Ops: send},
		{MPA: MPA{Rev: ptr(1), Rev1IRDORD: true, IRD: ptr[uint16](8), ORD: ptr[uint16](8), ReplyIRD: ptr[uint16](8), ReplyORD: ptr[uint16](4)}, Ops: send},
		{MPA: MPA{Rev: ptr(1), Reject: true, ReplyData: Data("no")}, Ops: send},
	}}
	markers := &Scenario{Connections: []Connection{{MPA: MPA{CRC: true, MarkersI2R: true, MarkersR2I: true},
		Ops: []Op{{Op: OpNameSend, Size: 3000}, {Op: OpNameWrite, Size: 5000, Dir: "r2i"}, {Op: OpNameRead, Size: 4000}}}}}
	return map[string]*Scenario{
		"rping":           mustBuiltin(t, "rping", Params{Seed: 1, Count: 3}),
		"mixed":           mustBuiltin(t, "mixed", Params{Seed: 2, Count: 1}),
		"every-terminate": mustBuiltin(t, "every-terminate", Params{}),
		"bulk-write-3":    multi,
		"ipv6-vlan-jumbo": v6,
		"v1-nocrc-mss536": v1,
		"seq-wrap":        wrap,
		"markers-both":    markers,
		"mpa-variants":    variants,
	}
}

func TestTsharkRoundTrip(t *testing.T) {
	oracle.Tshark(t)
	dir := t.TempDir()
	for name, sc := range tsharkScenarios(t) {
		t.Run(name, func(t *testing.T) {
			format := pcap.FormatPcap
			if strings.Contains(name, "ipv6") {
				format = pcap.FormatPcapNG
			}
			g := generate(t, sc, format)
			file := filepath.Join(dir, name+"."+string(format))
			if err := os.WriteFile(file, g.pcap, 0o644); err != nil {
				t.Fatal(err)
			}
			rows := tsharkRows(t, file)
			compared, frames := 0, map[int]bool{}
			for i := range g.truth.FPDUs {
				f := &g.truth.FPDUs[i]
				if f.FirstFrame != f.LastFrame {
					t.Fatalf("FPDU %d spans frames %d..%d", f.Index, f.FirstFrame, f.LastFrame)
				}
				frames[f.FirstFrame] = true
				row, ok := rows[f.FirstFrame]
				if !ok && markerScenarios[name] {
					t.Logf("frame %d (%s %s FPDU %d): tshark decodes no DDP (its marker bug)", f.FirstFrame, f.OpName, f.Dir, f.Index)
					continue
				}
				if !ok {
					t.Errorf("frame %d (%s %s FPDU %d): tshark decodes no DDP", f.FirstFrame, f.OpName, f.Dir, f.Index)
					continue
				}
				var ptrs []string
				for _, m := range f.Markers {
					ptrs = append(ptrs, strconv.Itoa(int(m.FPDUPTR)))
				}
				if got := strings.Join(row["iwarp_mpa.marker_fpduptr"], ","); got != strings.Join(ptrs, ",") {
					t.Errorf("frame %d (%s): markers FPDUPTR tshark %q, truth %q", f.FirstFrame, f.OpName, got, strings.Join(ptrs, ","))
				}
				for field, want := range expectFields(f, g.truth.Connections[f.Conn].CRC) {
					s, ok := tsharkValue(row, field)
					if !ok && field == "iwarp_rdma.term_errcode" && f.Term.Layer <= decode.TermLayerDDP && f.Term.EType == 0 {
						continue // tshark shows no code for a Local Catastrophic error
					}
					if !ok {
						t.Errorf("frame %d (%s): tshark has no %s", f.FirstFrame, f.OpName, field)
						continue
					}
					if field == "iwarp_rdma.term_ddp_seg_len" {
						s = "0x" + s // FT_BYTES: hex octets
					}
					got, err := tsNumber(s)
					if err != nil {
						t.Errorf("frame %d: %s = %q: %v", f.FirstFrame, field, s, err)
						continue
					}
					if got != want {
						t.Errorf("frame %d (%s): %s tshark %s, truth %#x", f.FirstFrame, f.OpName, field, s, want)
					}
					compared++
				}
			}
			for fr := range rows {
				if !frames[fr] {
					t.Errorf("frame %d: tshark decodes DDP where the truth has no FPDU", fr)
				}
			}
			if compared == 0 || markerScenarios[name] && compared < 5*len(g.truth.FPDUs)/2 {
				t.Fatalf("only %d values compared", compared)
			}
			t.Logf("%d FPDUs, %d values equal", len(g.truth.FPDUs), compared)
		})
	}
}

// tshark must also agree that the CRC of a corrupted FPDU is bad, and
// find it where the truth says (one FPDU per segment, no TCP impairment).
func TestTsharkBadCRC(t *testing.T) {
	bin := oracle.Tshark(t)
	sc := &Scenario{Connections: []Connection{{MPA: MPA{CRC: true}, Ops: []Op{{Op: OpNameSend, Size: 100, Repeat: 6}}}},
		Impairments: []Impairment{{Kind: ImpCorruptCRC, FPDU: 3}, {Kind: ImpCorruptCRC, FPDU: 5}}}
	g := generate(t, sc, pcap.FormatPcap)
	file := filepath.Join(t.TempDir(), "badcrc.pcap")
	if err := os.WriteFile(file, g.pcap, 0o644); err != nil {
		t.Fatal(err)
	}
	// tshark 4.0 raises no expert item for a bad MPA CRC; it writes "Bad
	// CRC32" in the tree, so read the MPA tree per frame.
	out, err := exec.Command(bin, "-r", file, "-n", "-O", "iwarp_mpa").Output()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	frame := ""
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "Frame "); ok {
			frame, _, _ = strings.Cut(rest, ":")
		}
		if strings.Contains(line, "Bad CRC32") {
			got = append(got, frame)
		}
	}
	var want []string
	for _, f := range g.truth.Findings {
		if f.Code == finding.MPACRCBad {
			want = append(want, fmt.Sprint(f.Frame))
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || len(want) != 2 {
		t.Errorf("tshark flags frames %v, truth %v", got, want)
	}
}
