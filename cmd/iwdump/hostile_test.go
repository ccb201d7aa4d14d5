package main

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/export"
	"github.com/iwkit/iwkit/internal/frame"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/tui"
)

// Hostile captures (issue 32): each is a small conversation built by hand
// around one storage message that crashed a decoder before its fix. They
// are committed under testdata/hostile with iwdump's text output; the test
// rebuilds each capture and checks the committed file is the same, then
// runs it through iwdump, the TUI's index and the export (in a test binary
// the containment of decoder panics is off: a panic fails this test).
// go test ./cmd/iwdump -run TestHostile -update rewrites the captures and
// their outputs.

// hostileConv is one conversation: the client connects to port, both
// sides exchange MPA v1 frames (CRC on, no markers, no private data),
// then each of sends goes as one RDMAP Send on QN 0.
type hostileConv struct {
	name  string
	why   string // the bug it caught
	want  string // what iwdump's text must show of it
	port  uint16
	sends []hostileSend
}

type hostileSend struct {
	r2i bool // from the server
	msg []byte
}

// smbdWrapped is SMB Direct's Negotiate Request and Response ([MS-SMBD]
// §2.2.1, §2.2.2: the server's MaxFragmentedSize 1 MiB), then a data
// message whose RemainingDataLength 0xFFFFFFF0 plus its DataLength 64
// wrapped a uint32 to 48 octets (§2.2.3).
func smbdWrapped() []hostileSend {
	le := binary.LittleEndian
	req := make([]byte, 20)
	le.PutUint16(req, 0x100)
	le.PutUint16(req[2:], 0x100)
	le.PutUint16(req[6:], 255)
	le.PutUint32(req[8:], 1364)
	le.PutUint32(req[12:], 1364)
	le.PutUint32(req[16:], 1<<20)
	resp := make([]byte, 32)
	le.PutUint16(resp, 0x100)
	le.PutUint16(resp[2:], 0x100)
	le.PutUint16(resp[4:], 0x100)
	le.PutUint16(resp[8:], 255)
	le.PutUint16(resp[10:], 255)
	le.PutUint32(resp[16:], 1<<20)
	le.PutUint32(resp[20:], 1364)
	le.PutUint32(resp[24:], 8192)
	le.PutUint32(resp[28:], 1<<20)
	data := make([]byte, 24+64)
	le.PutUint16(data, 255)
	le.PutUint32(data[8:], 0xFFFFFFF0)
	le.PutUint32(data[12:], 24)
	le.PutUint32(data[16:], 64)
	copy(data[24:], "\xfeSMB")
	return []hostileSend{{msg: req}, {r2i: true, msg: resp}, {msg: data}}
}

// nvmeConnectOffsetOverflow is the 64-octet NVMe-oF Connect capsule
// FuzzNVMe found (ulp/testdata/fuzz/FuzzNVMe/connect_offset_overflow):
// opcode 0x7F, fctype 0x01, an offset-type SGL (ulp-reference.md §1.2)
// whose offset 0xE22F0000000000FF is near 2^64; with PSDT 01 (FLAGS 0x40)
// where the fuzzer's had 00, so that content detection confirms NVMe on
// port 4420 (ulp-reference.md §5.2) as it would on a real connection.
var nvmeConnectOffsetOverflow = []byte("\x7f\x40\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\x00\x00\x00\x00\x00/\xe2\x00\x04\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")

var hostileConvs = []hostileConv{
	{name: "nvme_connect_offset_overflow", why: "ulp/nvme.go: Connect offset SGL, 64+int(off)+1024 wrapped negative (fixed in 731012f)", port: 4420, sends: []hostileSend{{msg: nvmeConnectOffsetOverflow}}, want: "| NVMe Connect cid 0 qid 0 sqsize 0"},
	{name: "smbd_fragment_total_wraps", why: "ulp/smbd.go: RemainingDataLength+DataLength summed in uint32 wrapped under MaxFragmentedSize", port: 5445, sends: smbdWrapped(), want: "error smbd.fragmented_too_large: SMB Direct message of 4294967344 octets"},
}

// build writes the conversation as a classic pcap: SYN, SYN-ACK, ACK, MPA
// Request, MPA Reply, the Sends, and the server's ACK of them.
func (hc *hostileConv) build(t *testing.T) []byte {
	t.Helper()
	cli := frame.Endpoint{MAC: [6]byte{2, 0, 0, 0, 0, 1}, Addr: netip.MustParseAddrPort("10.0.0.1:40000")}
	srv := frame.Endpoint{MAC: [6]byte{2, 0, 0, 0, 0, 2}, Addr: netip.AddrPortFrom(netip.MustParseAddr("10.0.0.2"), hc.port)}
	c2s, s2c := frame.NewTemplate(cli, srv, 0), frame.NewTemplate(srv, cli, 0)
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, pcap.FormatPcap, layers.LinkTypeEthernet, 65535)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	cseq, sseq := uint32(1000), uint32(5000)
	put := func(tpl *frame.Template, s frame.Segment, payload []byte) {
		s.Window = 65535
		b := tpl.Append(nil, &s, payload)
		if err := w.WriteFrame(ts, b, len(b)); err != nil {
			t.Fatal(err)
		}
		ts = ts.Add(100 * time.Microsecond)
	}
	put(c2s, frame.Segment{Seq: cseq, Flags: frame.TCPFlagSYN, MSS: 1460}, nil)
	put(s2c, frame.Segment{Seq: sseq, Ack: cseq + 1, Flags: frame.TCPFlagSYN | frame.TCPFlagACK, MSS: 1460}, nil)
	cseq, sseq = cseq+1, sseq+1
	put(c2s, frame.Segment{Seq: cseq, Ack: sseq, Flags: frame.TCPFlagACK}, nil)
	req := (&decode.MPAFrame{CRC: true, Rev: 1}).Append(nil)
	put(c2s, frame.Segment{Seq: cseq, Ack: sseq, Flags: frame.TCPFlagACK | frame.TCPFlagPSH}, req)
	cseq += uint32(len(req))
	rep := (&decode.MPAFrame{Reply: true, CRC: true, Rev: 1}).Append(nil)
	put(s2c, frame.Segment{Seq: sseq, Ack: cseq, Flags: frame.TCPFlagACK | frame.TCPFlagPSH}, rep)
	sseq += uint32(len(rep))
	var msn [2]uint32
	for _, s := range hc.sends {
		// DDP untagged, Last, DV 1; RDMAP RV 1, Send (RFC 5041 §4.3, RFC 5040 §4.1).
		d := 0
		if s.r2i {
			d = 1
		}
		msn[d]++
		h := decode.DDPHeader{Last: true, DV: decode.DDPVersion, RsvdULP: decode.RDMAPVersion<<6 | byte(decode.OpSend), QN: 0, MSN: msn[d]}
		fpdu := decode.AppendFPDU(nil, append(h.Append(nil), s.msg...), true)
		if s.r2i {
			put(s2c, frame.Segment{Seq: sseq, Ack: cseq, Flags: frame.TCPFlagACK | frame.TCPFlagPSH}, fpdu)
			sseq += uint32(len(fpdu))
		} else {
			put(c2s, frame.Segment{Seq: cseq, Ack: sseq, Flags: frame.TCPFlagACK | frame.TCPFlagPSH}, fpdu)
			cseq += uint32(len(fpdu))
		}
	}
	put(s2c, frame.Segment{Seq: sseq, Ack: cseq, Flags: frame.TCPFlagACK}, nil)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestHostile(t *testing.T) {
	for _, hc := range hostileConvs {
		t.Run(hc.name, func(t *testing.T) {
			path := filepath.Join("../../testdata/hostile", hc.name+".pcap")
			built := hc.build(t)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, built, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			committed, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./cmd/iwdump -run TestHostile -update writes it)", err)
			}
			if !bytes.Equal(committed, built) {
				t.Fatalf("%s differs from what the test builds (%s); -update rewrites it", path, hc.why)
			}

			// iwdump: the text output, against its golden file.
			code, out, errs := runArgs(t, "-r", path)
			if code != exitOK {
				t.Fatalf("iwdump exit %d: %s", code, errs)
			}
			golden := path + ".txt"
			if *update {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if out != string(want) {
				t.Errorf("iwdump output differs from %s:\n%s", golden, out)
			}
			if !strings.Contains(out, hc.want) {
				t.Errorf("iwdump output lacks %q", hc.want)
			}

			// The TUI's index: every frame indexed.
			s, err := tui.Open(tui.Config{File: path})
			if err != nil {
				t.Fatal(err)
			}
			s.Wait()
			if _, _, done, err := s.Ix.Progress(); !done || err != nil {
				t.Errorf("TUI index: done %v, error %v", done, err)
			}
			if s.Ix.Len() == 0 {
				t.Error("TUI index: no rows")
			}
			s.Close()

			// The export: every table written.
			res := export.Export(export.Set{Capture: hc.name, Files: []string{path}}, export.Config{Dir: t.TempDir()})
			if res.Err != nil || res.Counts.PDUs == 0 {
				t.Errorf("export: %+v, error %v", res.Counts, res.Err)
			}
		})
	}
}
