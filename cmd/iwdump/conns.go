package main

import (
	"net/netip"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
)

// This file finds MPA frames and FPDUs in captures where every FPDU sits
// whole inside one TCP segment (one or several per segment). It is the
// first, segment-aligned framer; the streaming reassembler (reassembly/)
// replaces it for FPDUs that span segments, markers, loss and resync.

type endpoint = netip.AddrPort

type flowKey struct{ a, b endpoint }

func keyOf(src, dst endpoint) (flowKey, bool) {
	if src.Compare(dst) < 0 {
		return flowKey{src, dst}, false
	}
	return flowKey{dst, src}, true
}

// conn is what the framer knows about one TCP connection.
type conn struct {
	id        int
	client    endpoint // the SYN's sender, else the first sender seen
	initiator endpoint // the MPA Request's sender (RFC 5044 §7.1: unrelated to the SYN)
	sawReq    bool
	sawRep    bool
	crc       bool // C in either frame (RFC 5044 §7.1.1: OR-ed)
	markers   [2]bool
	iwarp     bool // handshake seen or FPDUs recognised by content
	rejected  bool
}

// dir names the direction of a segment: "i2r" from the MPA initiator, "r2i"
// towards it; before the handshake the TCP client stands in.
func (c *conn) dir(src endpoint) string {
	ref := c.client
	if c.sawReq {
		ref = c.initiator
	}
	if src == ref {
		return "i2r"
	}
	return "r2i"
}

func (c *conn) markersFrom(src endpoint) bool {
	// M in the Request asks for markers towards the initiator; M in the
	// Reply asks for markers towards the responder (RFC 5044 §7.1.1).
	if c.dir(src) == "i2r" {
		return c.markers[1]
	}
	return c.markers[0]
}

type conns struct {
	m    map[flowKey]*conn
	next int
}

func (cs *conns) get(p *pcap.Packet) *conn {
	src := netip.AddrPortFrom(p.Src, p.SrcPort)
	dst := netip.AddrPortFrom(p.Dst, p.DstPort)
	k, _ := keyOf(src, dst)
	c := cs.m[k]
	syn := p.Flags&pcap.TCPSyn != 0 && p.Flags&pcap.TCPAck == 0
	if c == nil || (syn && (c.sawReq || c.iwarp)) { // a reused 4-tuple starts a new connection
		cs.next++
		c = &conn{id: cs.next, client: src}
		cs.m[k] = c
	}
	return c
}

// pduSink receives each PDU found, with the frame it ends in.
type pduSink func(c *conn, src, dst endpoint, p *decode.PDU, wire []byte)

// scan finds the MPA frames and FPDUs in one segment's payload.
func (c *conn) scan(src, dst endpoint, payload []byte, pdu *decode.PDU, emit pduSink) (undecoded int, err error) {
	off := 0
	for off < len(payload) {
		rest := payload[off:]
		if _, ok := decode.IsMPAKey(rest); ok {
			*pdu = decode.PDU{IsMPAFrame: true}
			n, err := decode.ParseMPAFrame(rest, &pdu.MPA)
			if err != nil {
				return len(rest), err
			}
			c.noteFrame(src, &pdu.MPA)
			emit(c, src, dst, pdu, rest[:n])
			off += n
			continue
		}
		if !c.iwarp && off == 0 && !looksLikeFPDUs(rest) {
			return 0, nil // not iWARP (yet): ULP streaming data or another protocol
		}
		if c.rejected {
			return len(rest), nil // after a rejecting Reply the stream is the ULP's (RFC 5044 §7.1.2)
		}
		if c.markersFrom(src) {
			return len(rest), errMarkers
		}
		var crc *bool
		if c.sawReq && c.sawRep {
			crc = &c.crc
		}
		n, err := decode.DecodeFPDU(rest, crc, pdu)
		if err != nil {
			return len(rest), err
		}
		if crc == nil && pdu.ComputedCRC == pdu.FPDU.CRC {
			pdu.CRCStatus = decode.CRCGood // a matching CRC32c shows CRC is in use
		}
		c.iwarp = true
		emit(c, src, dst, pdu, rest[:n])
		off += n
	}
	return 0, nil
}

type framerError string

func (e framerError) Error() string { return string(e) }

const errMarkers = framerError("FPDUs with markers need the streaming reassembler")

func (c *conn) noteFrame(src endpoint, f *decode.MPAFrame) {
	c.iwarp = true
	if !f.Reply {
		c.sawReq, c.initiator = true, src
		c.markers[0] = f.Markers
	} else {
		c.sawRep = true
		c.markers[1] = f.Markers
		c.rejected = f.Reject
	}
	c.crc = c.crc || f.CRC
}

// looksLikeFPDUs recognises iWARP by content where no handshake was seen:
// the payload must be a whole chain of FPDUs whose DDP and RDMAP headers
// decode with matching versions (draft-differences.md §7).
func looksLikeFPDUs(b []byte) bool {
	var f decode.FPDU
	var s decode.Segment
	for len(b) > 0 {
		n, err := decode.ParseFPDU(b, &f)
		if err != nil || decode.ParseSegment(f.ULPDU, &s) != nil {
			return false
		}
		if s.DDP.DV != uint8(s.RDMAP.RV) || s.DDP.DV > 1 || !s.RDMAP.Opcode.Known() || s.DDP.Tagged != s.RDMAP.Opcode.Tagged() {
			return false
		}
		b = b[n:]
	}
	return true
}
