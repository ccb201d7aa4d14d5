package wirefuzz

import (
	"encoding/binary"

	"github.com/iwkit/iwkit/decode"
)

// queues holds the next MSN of each untagged queue this side sends on
// (RFC 5041 §5.1: MSN starts at 1 and counts the queue's messages).
type queues [4]uint32

func newQueues() queues { return queues{1, 1, 1, 1} }

// fpdu builds step s's FPDU from its template with its mutations: the DDP
// header (RFC 5041 §4.2, §4.3), the RDMAP header the opcode needs (Read
// Request RFC 5040 §4.4, Terminate §4.8), a payload, then MPA framing
// (RFC 5044 §4: ULPDU_Length, PAD, CRC, a marker in front when asked).
// crc says whether the connection negotiated CRCs (else the CRC field is
// 0, as siw sends it). It returns the octets to send (cut short by the
// trunc mutation) and where to cut them into two writes (split, 0: one
// write).
func fpdu(s Step, q *queues, crc bool) (b []byte, split int) {
	t := templates[s.PDU]
	h := decode.DDPHeader{Tagged: t.tagged, Last: true, DV: 1}
	rc := decode.RDMAPControl{RV: decode.RDMAPVersion, Opcode: t.op}
	size := t.size
	var msn *uint32
	readSize := uint32(16)
	if s.PDU == "rtr-read" {
		readSize = 0
	}
	term := uint32(0x02FF0000) // RDMAP, Remote Operation Error, code 0xFF
	inv := uint32(0)
	var pad, crcXor uint32
	ulpduDelta, marker, trunc := 0, -1, 0
	setMSN := false
	if !t.tagged {
		h.QN = t.qn
	}
	for _, m := range s.Muts {
		v := m.V
		switch m.F {
		case "ddp.t":
			h.Tagged = v != 0
		case "ddp.l":
			h.Last = v != 0
		case "ddp.rsvd":
			h.Rsvd = uint8(v)
		case "ddp.dv":
			h.DV = uint8(v) & decode.DDPDVMask
		case "rdmap.rv":
			rc.RV = uint8(v)
		case "rdmap.rsv":
			rc.Rsv = uint8(v)
		case "rdmap.op":
			rc.Opcode = decode.Opcode(v)
		case "ddp.qn":
			h.QN = uint32(v)
		case "ddp.msn":
			h.MSN, setMSN = uint32(v), true
		case "ddp.mo":
			h.MO = uint32(v)
		case "ddp.stag":
			h.STag = uint32(v)
		case "ddp.to":
			h.TO = uint64(v)
		case "ddp.inv":
			inv = uint32(v)
		case "len":
			size = int(min(max(v, 0), 65000))
		case "read.size":
			readSize = uint32(v)
		case "term.ctrl":
			term = uint32(v)
		case "ulpdu_len":
			ulpduDelta = int(v)
		case "pad":
			pad = uint32(v)
		case "crc":
			crcXor = uint32(v)
		case "marker":
			marker = int(v)
		case "split":
			split = int(v)
		case "trunc":
			trunc = int(v)
		}
	}
	if !h.Tagged {
		if !setMSN && h.QN < uint32(len(q)) {
			msn = &q[h.QN]
			h.MSN = *msn
			*msn++
		}
		h.RsvdULP2 = inv // the Invalidate STag of the Send types (RFC 5040 §4.3)
	}
	h.RsvdULP = rc.Octet()
	ulpdu := h.Append(make([]byte, 0, 64+size))
	switch rc.Opcode {
	case decode.OpReadRequest:
		r := decode.ReadRequest{SinkSTag: 0x1234, Size: readSize}
		ulpdu = r.Append(ulpdu)
	case decode.OpTerminate:
		ulpdu = binary.BigEndian.AppendUint32(ulpdu, term)
	}
	for i := 0; i < size; i++ {
		ulpdu = append(ulpdu, byte(i))
	}
	if marker >= 0 {
		// A marker where none is due: 16 reserved bits, then FPDUPTR
		// (RFC 5044 §5.2).
		b = append(b, 0, 0, byte(marker>>8), byte(marker))
	}
	start := len(b)
	b = decode.AppendFPDU(b, ulpdu, crc)
	if ulpduDelta != 0 {
		binary.BigEndian.PutUint16(b[start:], uint16(len(ulpdu)+ulpduDelta))
	}
	if pad != 0 && decode.PadLen(len(ulpdu)) > 0 {
		b[start+2+len(ulpdu)] = byte(pad)
	}
	if crcXor != 0 {
		c := decode.WireCRC(b[len(b)-4:]) ^ crcXor
		decode.PutCRC(b[len(b)-4:], c)
	}
	if trunc > 0 && trunc < len(b) {
		b = b[:trunc]
	}
	if split <= 0 || split >= len(b) {
		split = 0
	}
	return b, split
}
