package decode_test

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
)

// tsharkTable reads one of testdata/siw/tshark-VERSION's TSV files: a
// header line of field names, then one row per frame.
func tsharkTable(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comma, r.LazyQuotes, r.FieldsPerRecord = '\t', true, -1
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var rows []map[string]string
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, v := range rec {
			if i < len(recs[0]) && v != "" {
				m[recs[0][i]] = v
			}
		}
		rows = append(rows, m)
	}
	return rows
}

// framePayloads returns every frame's TCP payload, by frame number.
func framePayloads(t *testing.T, file string) map[int][]byte {
	t.Helper()
	r, err := pcap.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[int][]byte{}
	var fr pcap.Frame
	var p pcap.Packet
	for {
		if err := r.Next(&fr); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if pcap.DecodeTCP(fr.LinkType, fr.Data, &p) == nil && len(p.Payload) > 0 {
			out[fr.Number] = append([]byte(nil), p.Payload...)
		}
	}
}

// The committed tshark decodes of siw captures (testdata/siw/tshark-*)
// agree with decode on every MPA frame and FPDU that starts its TCP
// segment, field by field, and every CRC tshark checked is good for us
// too. Unlike the live differential tests this needs no tshark.
func TestTsharkExpectedFields(t *testing.T) {
	dirs, _ := filepath.Glob("../testdata/siw/tshark-*")
	if len(dirs) == 0 {
		t.Fatal("no testdata/siw/tshark-* directory")
	}
	tables, _ := filepath.Glob(filepath.Join(dirs[len(dirs)-1], "*.fields.tsv"))
	if len(tables) < 6 {
		t.Fatalf("only %d fields tables", len(tables))
	}
	checked := map[string]int{}
	for _, table := range tables {
		name := strings.TrimSuffix(filepath.Base(table), ".fields.tsv")
		payloads := framePayloads(t, filepath.Join("../testdata/siw", name+".pcap"))
		crcChecked := map[string]bool{}
		for _, row := range tsharkTable(t, strings.TrimSuffix(table, ".fields.tsv")+".crc-status.tsv") {
			crcChecked[row["frame.number"]] = true
		}
		for _, row := range tsharkTable(t, table) {
			frame := row["frame.number"]
			var n int
			fmt.Sscan(frame, &n)
			b := payloads[n]
			at := name + " frame " + frame
			got := map[string]string{}
			switch {
			case row["iwarp_mpa.rev"] != "":
				var f decode.MPAFrame
				if _, err := decode.ParseMPAFrame(b, &f); err != nil {
					t.Errorf("%s: %v", at, err)
					continue
				}
				got["iwarp_mpa.rev"] = fmt.Sprint(f.Rev)
				got["iwarp_mpa.marker_flag"] = b01(f.Markers)
				got["iwarp_mpa.crc_flag"] = b01(f.CRC)
				got["iwarp_mpa.rej_flag"] = b01(f.Reject)
				got["iwarp_mpa.pdlength"] = fmt.Sprint(f.PDLength)
				if f.PDLength > 0 {
					got["iwarp_mpa.privatedata"] = fmt.Sprintf("%x", f.PrivateData)
				}
				checked["mpa"]++
			case row["iwarp_mpa.ulpdulength"] != "" && !strings.Contains(row["iwarp_mpa.ulpdulength"], ","):
				var p decode.PDU
				crc := crcChecked[frame]
				use := decode.CRCUseOff
				if crc {
					use = decode.CRCUseOn
				}
				if _, err := decode.DecodeFPDU(b, use, &p); err != nil || p.SegErr != nil {
					// An FPDU that does not start this segment (tshark
					// reassembled it from several) is not compared.
					continue
				}
				if crc && p.CRCStatus != decode.CRCGood {
					t.Errorf("%s: tshark checked the CRC, decode says %v", at, p.CRCStatus)
				}
				d := p.Seg.DDP
				got["iwarp_mpa.ulpdulength"] = fmt.Sprint(p.FPDU.ULPDULength)
				got["iwarp_ddp.tagged_flag"] = b01(d.Tagged)
				got["iwarp_ddp.last_flag"] = b01(d.Last)
				got["iwarp_ddp.dv"] = fmt.Sprint(d.DV)
				if d.Tagged {
					got["iwarp_ddp.stag"] = fmt.Sprintf("0x%08x", d.STag)
					got["iwarp_ddp.tagged_offset"] = fmt.Sprintf("0x%016x", d.TO)
				} else {
					got["iwarp_ddp.qn"] = fmt.Sprint(d.QN)
					got["iwarp_ddp.msn"] = fmt.Sprint(d.MSN)
					got["iwarp_ddp.mo"] = fmt.Sprint(d.MO)
				}
				got["iwarp_rdma.version"] = fmt.Sprint(p.Seg.RDMAP.RV)
				got["iwarp_rdma.opcode"] = fmt.Sprintf("0x%02x", uint8(p.Seg.RDMAP.Opcode))
				checked[p.Seg.RDMAP.Opcode.Short()]++
			default:
				continue
			}
			for k, v := range got {
				if row[k] != v {
					t.Errorf("%s: %s: tshark %q, decode %q", at, k, row[k], v)
				}
			}
		}
	}
	t.Logf("compared with tshark's committed decode: %v", checked)
	if checked["mpa"] < 12 || len(checked) < 5 {
		t.Errorf("too little compared: %v", checked)
	}
}

func b01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
