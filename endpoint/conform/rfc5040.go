package conform

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/endpoint"
)

// The cases of this file cover what RFC 5040 §7.1/§7.2 and §8, RFC 5041 §7
// and RFC 5044 §7.1 ask of a receiver beyond the first suite (issue 31):
// Send with Invalidate errors, STags of another stream, access rights,
// markers, the RTR type, the content of Terminates, and the MPA
// negotiation itself (CRC, key, PD_Length, revision, R, IRD/ORD).

func rfc5040Cases() []Case {
	return []Case{
		{ID: "rdmap-send-inv-invalid", Clause: "RFC 5040 §7.2 (RD-06)", Sent: "Send with Invalidate of an STag the target never issued",
			needSTag: true, expect: term(0, 1, 0x00).or(0, 1, 0x09).or(0, 2, 0x09), run: func(c *conn) (string, error) {
				s, _, _ := c.stag()
				return "", c.post(c.sendInv(uint32(s) ^ 0x5a5a5a00))
			}},
		{ID: "rdmap-send-inv-stag0", Clause: "RFC 5040 §7.2 (RD-07)", Sent: "Send with Invalidate of STag 0",
			needSTag: true, expect: term(0, 1, 0x09).or(0, 2, 0x09).or(0, 1, 0x00), run: func(c *conn) (string, error) {
				return "", c.post(c.sendInv(0))
			}},
		{ID: "rdmap-send-inv-other-stream", Clause: "RFC 5040 §7.2 (RD-07), §8.1.1", Sent: "Send with Invalidate of the STag learned on another connection",
			needSTag: true, expect: term(0, 1, 0x03).or(0, 1, 0x09).or(0, 2, 0x09).or(0, 1, 0x00), run: func(c *conn) (string, error) {
				s, _, _, skip := c.otherSTag()
				if skip != "" {
					return skip, nil
				}
				return "", c.post(c.sendInv(uint32(s)))
			}},
		{ID: "ddp-stag-other-stream", Clause: "RFC 5041 §7.2 (DDP-09), RFC 5040 §8.1.1", Sent: "RDMA Write to the STag learned on another connection",
			expect: term(1, 1, 0x02).or(1, 1, 0x00), run: func(c *conn) (string, error) {
				s, to, _, skip := c.otherSTag()
				if skip != "" {
					return skip, nil
				}
				return "", c.post(c.write(s, to, 16))
			}},
		{ID: "ddp-write-read-only", Clause: "RFC 5040 §8.1.1 (DDP-12), RFC 5042 §5.2", Sent: "RDMA Write to an STag registered for Remote Read only",
			needSTag: true, expect: term(0, 1, 0x02).or(1, 1, 0x02).or(1, 1, 0x00), run: func(c *conn) (string, error) {
				if !c.o.Listen {
					return "needs a Read-only STag of the target: with --listen, an rping client's source buffer", nil
				}
				s, to, _ := c.stag()
				return "", c.post(c.write(s, to, 16))
			}},
		{ID: "mpa-markers-unnegotiated", Clause: "RFC 5044 §7.1.1 (MPA-19)", Sent: "Send with markers, none negotiated",
			expect: expect{anyTerm: true, closed: true},
			run: func(c *conn) (string, error) {
				if c.ec.Params().MarkersTx {
					return "markers negotiated (drop --markers)", nil
				}
				if c.ec.Params().PeerToPeer {
					// The RTR went first: the Send need not cross a
					// marker position (every 512 octets, RFC 5044 §5).
					return "peer-to-peer: the Send is not the stream's first FPDU", nil
				}
				if err := c.inject(endpoint.Fault{Kind: endpoint.FaultMarkers, On: endpoint.OnSend}); err != nil {
					return "", err
				}
				return "", c.post(c.advert(1))
			}},
		{ID: "mpa-fpduptr", Clause: "RFC 5044 §5.2, §8 (MPA-18)", Sent: "Send whose markers' FPDUPTR is wrong",
			expect: term(2, 0, 0x03), run: func(c *conn) (string, error) {
				if !c.ec.Params().MarkersTx {
					return "markers not negotiated (use --markers, with a target that takes them)", nil
				}
				if err := c.inject(endpoint.Fault{Kind: endpoint.FaultFPDUPTR, On: endpoint.OnSend}); err != nil {
					return "", err
				}
				return "", c.post(c.advert(1))
			}},
		{ID: "mpa-rtr-type", Clause: "RFC 6581 §5, §9.3 (MPA-14)", Sent: "peer-to-peer: an RTR of a type the Reply did not name",
			expect: term(2, 0, 0x07).or(0, 2, 0x06).orClose(), mpa: rtrTypeMismatch},
		{ID: "rdmap-term-ddp-header", Clause: "RFC 5040 §7.1 rule 2, §4.8", Sent: "Send on QN 5; the Terminate's copied DDP header is checked",
			expect: expect{ok: true}, mpa: termCopiesDDP},
		{ID: "rdmap-term-rdma-header", Clause: "RFC 5040 §7.1 rule 3, §4.8", Sent: "RDMA Read of the learned STag with another key; the Terminate's copied Read Request is checked",
			expect: expect{ok: true}, mpa: termCopiesReadRequest},
		{ID: "mpa-request-c", Clause: "RFC 5044 §7.1.1 (C), §4.4", Sent: "MPA Request with C set, then a Send whose CRC is inverted",
			expect: term(2, 0, 0x02), mpa: crcRequested},
		{ID: "mpa-key", Clause: "RFC 5044 §7.1.1, §7.1.2 rule 5 (MPA-01)", Sent: "MPA Request whose key has one octet changed",
			expect: expect{closed: true}, mpa: rawRequest(func(b []byte) []byte { b[3] ^= 0x20; return b }, wantClose)},
		{ID: "mpa-pd-length", Clause: "RFC 5044 §7.1.1 (MPA-04)", Sent: "MPA Request with PD_Length 513 (and 513 octets)",
			expect: expect{closed: true}, mpa: rawRequest(func(b []byte) []byte {
				binary.BigEndian.PutUint16(b[18:20], 513)
				return append(b, make([]byte, 513-(len(b)-decode.MPAFrameHdrLen))...)
			}, wantCloseOrReject)},
		{ID: "mpa-unknown-rev", Clause: "RFC 5044 §7.1.1 (Rev, MPA-02)", Sent: "MPA Request of Rev 3",
			expect: expect{closed: true}, mpa: rawRequest(func(b []byte) []byte { b[17] = 3; return b }, wantCloseOrReject)},
		{ID: "mpa-request-r", Clause: "RFC 5044 §7.1.1 (R, MPA-03)", Sent: "MPA Request with R set (not checked on reception)",
			expect: expect{ok: true}, mpa: rawRequest(func(b []byte) []byte { b[16] |= decode.MPAFlagR; return b }, wantAccept)},
		{ID: "mpa-ird-ord", Clause: "RFC 6581 §9.1 (MPA-13)", Sent: "MPA v2 Request, IRD 1 and ORD 1; the Reply's ORD is checked",
			expect: expect{ok: true}, mpa: irdOrd(1, 1)},
		{ID: "mpa-ird-ord-none", Clause: "RFC 6581 §9.1 (MPA-13)", Sent: "MPA v2 Request, IRD and ORD 0x3FFF (no negotiation)",
			expect: expect{ok: true}, mpa: irdOrd(decode.MPAv2NoNegotiation, decode.MPAv2NoNegotiation)},
	}
}

// orClose also takes the connection closed without a Terminate.
func (e expect) orClose() expect {
	e.closed = true
	return e
}

// sendInv is a Send with Invalidate of stag carrying our rping
// advertisement (so that it takes the target's posted receive).
func (c *conn) sendInv(stag uint32) endpoint.SendWR {
	wr := c.advert(1)
	wr.Opcode, wr.InvalidateSTag = endpoint.OpSendInv, endpoint.STag(stag)
	return wr
}

// otherSTag learns, on a second connection that stays open until the
// case's ends, the STag of that connection's rping buffer: an STag of
// another RDMAP Stream (and, for rping, another PD) of the target.
func (c *conn) otherSTag() (endpoint.STag, uint64, uint32, string) {
	if c.o.Listen {
		return 0, 0, 0, "needs a second connection to the target (the suite dials)"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*c.o.Timeout)
	defer cancel()
	other, err := open(ctx, c.o, nil, c.o.Config, false)
	if err != nil {
		return 0, 0, 0, "no second connection: " + err.Error()
	}
	c.others = append(c.others, other)
	if err := other.learn(ctx); err != nil {
		return 0, 0, 0, "no STag learned on the second connection: " + err.Error()
	}
	s, to, n := other.stag()
	return s, to, n, ""
}

// rtrTypeMismatch: in the peer-to-peer model, the first FPDU is an RTR of
// a type the Reply did not name (the Read RTR when it named Write, else
// the Write RTR). Only a valid FPDU goes first: a first FPDU that Linux
// siw rejects crashes its host (peers/siw/iwcm-969.md).
func rtrTypeMismatch(ctx context.Context, o *Options, ln *endpoint.Listener) (got, verdict, reason string) {
	if ln != nil || !o.Config.PeerToPeer {
		return "n/a", Skip, "needs the peer-to-peer model, dialing (--p2p)"
	}
	cfg := o.Config
	// Offer Write only; then send the Read RTR.
	cfg.RTR = endpoint.RTRWrite
	c, err := openWith(ctx, o, cfg, func(qp *endpoint.QP) {
		qp.InjectFault(endpoint.Fault{Kind: endpoint.FaultRTRType, On: endpoint.OnRTR, Value: 3})
	})
	if err != nil {
		return "no connection: " + err.Error(), Error, "connecting"
	}
	defer c.close()
	re := c.reaction(ctx, o.Timeout)
	e := term(2, 0, 0x07).or(0, 2, 0x06).orClose()
	if e.match(re) {
		return re.String(), Pass, ""
	}
	return re.String(), Fail, ""
}

// openWith is open with a hook on the QP before the connection is made.
func openWith(ctx context.Context, o *Options, cfg endpoint.Config, hook func(*endpoint.QP)) (*conn, error) {
	o2 := *o
	o2.beforeDial = hook
	return open(ctx, &o2, nil, cfg, false)
}

// termCopiesDDP: a Send on an invalid QN must be answered by a Terminate
// that carries the DDP header of the offending segment (RFC 5040 §7.1
// rule 2: D set, the Terminated DDP Header the segment's).
func termCopiesDDP(ctx context.Context, o *Options, ln *endpoint.Listener) (got, verdict, reason string) {
	c, err := open(ctx, o, ln, o.Config, false)
	if err != nil {
		return "no connection", Error, "connecting: " + err.Error()
	}
	defer c.close()
	c.inject(endpoint.Fault{Kind: endpoint.FaultQN, On: endpoint.OnSend, Value: 5})
	if err := c.post(c.advert(1)); err != nil {
		return "n/a", Error, "posting: " + err.Error()
	}
	re := c.reaction(ctx, o.Timeout)
	ti := c.qp.Terminate()
	if re.kind != "terminate" || ti == nil {
		return re.String(), Skip, "no Terminate to check (ddp-qn judges the reaction)"
	}
	h := ti.Header
	got = fmt.Sprintf("%s; D=%v", re, h.D)
	if !h.HasDDP {
		return got, Fail, "no Terminated DDP Header (RFC 5040 §7.1 rule 2 requires it)"
	}
	d := h.TermDDP
	got += fmt.Sprintf(" copied DDP T=%v QN=%d MSN=%d MO=%d", d.Tagged, d.QN, d.MSN, d.MO)
	if d.Tagged || d.QN != 5 || d.MSN != 1 || d.MO != 0 || !d.Last {
		return got, Fail, "the copied DDP header is not the offending segment's (untagged, L, QN 5, MSN 1, MO 0)"
	}
	if h.R {
		return got, Fail, "R set: a Terminate for a Send carries no RDMA header (RFC 5040 §7.1 rule 2)"
	}
	return got, Pass, ""
}

// termCopiesReadRequest: a Read Request with an invalid source STag must
// be answered by a Terminate that carries its DDP and RDMA headers (RFC
// 5040 §7.1 rule 3).
func termCopiesReadRequest(ctx context.Context, o *Options, ln *endpoint.Listener) (got, verdict, reason string) {
	c, err := open(ctx, o, ln, o.Config, false)
	if err != nil {
		return "no connection", Error, "connecting: " + err.Error()
	}
	defer c.close()
	if err := c.learn(ctx); err != nil {
		return "n/a", Skip, "no STag learned: " + err.Error()
	}
	s, to, _ := c.stag()
	if err := c.post(c.read(s^0x80, to, 16)); err != nil {
		return "n/a", Error, "posting: " + err.Error()
	}
	re := c.reaction(ctx, o.Timeout)
	ti := c.qp.Terminate()
	if re.kind != "terminate" || ti == nil {
		return re.String(), Skip, "no Terminate to check (rdmap-read-invalid judges the reaction)"
	}
	h := ti.Header
	got = fmt.Sprintf("%s; D=%v R=%v", re, h.D, h.R)
	if !h.HasDDP || !h.HasRDMA {
		return got, Fail, "the Terminated DDP Header or RDMA Header is missing (RFC 5040 §7.1 rule 3 requires both)"
	}
	r := h.TermRDMA
	got += fmt.Sprintf(" copied Read Request SrcSTag=%#x SrcTO=%#x size=%d; DDP QN=%d", r.SrcSTag, r.SrcTO, r.Size, h.TermDDP.QN)
	if r.SrcSTag != uint32(s^0x80) || r.SrcTO != to || r.Size != 16 || h.TermDDP.QN != decode.QNReadReq {
		return got, Fail, "the copied headers are not the offending Read Request's"
	}
	return got, Pass, ""
}

// crcRequested: the Request sets C whatever --crc says; RFC 5044 §7.1.1:
// C in either frame makes both ends generate and check CRCs.
func crcRequested(ctx context.Context, o *Options, ln *endpoint.Listener) (got, verdict, reason string) {
	if ln != nil {
		return "n/a", Skip, "the target's Request decides (the suite listens)"
	}
	cfg := o.Config
	cfg.CRC = true
	c, err := open(ctx, o, nil, cfg, false)
	if err != nil {
		return "no connection", Error, "connecting: " + err.Error()
	}
	defer c.close()
	if !c.ec.Params().CRC {
		return "CRC off after a Request with C", Fail, "the connection did not take CRCs"
	}
	c.inject(endpoint.Fault{Kind: endpoint.FaultBadCRC, On: endpoint.OnSend})
	if err := c.post(c.advert(1)); err != nil {
		return "n/a", Error, "posting: " + err.Error()
	}
	re := c.reaction(ctx, o.Timeout)
	if term(2, 0, 0x02).match(re) {
		return re.String(), Pass, ""
	}
	return re.String(), Fail, "a target that was asked for CRCs did not check them"
}

// want is what a target must do with a raw Request.
type want int

const (
	wantAccept        want = iota // an acceptance (what differs is not checked on reception)
	wantClose                     // the close, no acceptance and no Reject (RFC 5044 §7.1.1)
	wantCloseOrReject             // the close, a Reject before it allowed
)

// rawRequest sends the suite's Request (peer-to-peer off) after edit on a
// new connection and judges what comes back by w.
func rawRequest(edit func([]byte) []byte, w want) func(ctx context.Context, o *Options, ln *endpoint.Listener) (string, string, string) {
	return func(ctx context.Context, o *Options, ln *endpoint.Listener) (got, verdict, reason string) {
		if ln != nil {
			return "n/a", Skip, "the suite listens (the target sends the Request)"
		}
		rep, end, err := exchange(ctx, o, edit(baseRequest(o, decode.MPAv2{IRD: 1, ORD: 1})))
		if err != nil {
			return "no connection", Error, err.Error()
		}
		return judgeReply(rep, end, w)
	}
}

func judgeReply(rep *decode.MPAFrame, end string, w want) (got, verdict, reason string) {
	switch {
	case rep == nil && end == "silence":
		got = "silence (no Reply, no close)"
		if w == wantAccept {
			return got, Fail, "no Reply"
		}
		return got, Fail, "the connection stayed open without a Reply: RFC 5044 §7.1.1 requires the close"
	case rep == nil:
		got = "close (" + end + ", no Reply)"
		if w == wantAccept {
			return got, Fail, "a Request whose only oddity is not checked on reception was refused"
		}
		return got, Pass, ""
	case rep.Reject:
		got = fmt.Sprintf("Reject (Rev %d), then %s", rep.Rev, end)
		switch w {
		case wantAccept:
			return got, Fail, "rejected"
		case wantCloseOrReject:
			return got, Pass, ""
		}
		return got, Fail, "a Reject answers a Request taken as well-formed; RFC 5044 §7.1.1 requires the close of a malformed one"
	}
	got = fmt.Sprintf("Reply accepting (Rev %d)", rep.Rev)
	if w == wantAccept {
		return got, Pass, ""
	}
	return got, Fail, "accepted a Request RFC 5044 §7.1.1 requires it to refuse by closing"
}

// baseRequest is the suite's Request: its revision, C and M as configured,
// the RFC 6581 block v (client-server) for Rev 2.
func baseRequest(o *Options, v decode.MPAv2) []byte {
	f := decode.MPAFrame{Rev: 2, CRC: o.Config.CRC, Markers: o.Config.Markers}
	if o.Config.Rev == 1 {
		f.Rev = 1
	} else {
		f.Enhanced, f.HasV2, f.V2 = true, true, v
		f.PrivateData = make([]byte, decode.MPAv2Len)
	}
	return f.Append(nil)
}

// exchange sends req on a new connection and reads the answer: the Reply
// (nil when none came) and how the connection ended ("FIN", "reset",
// "silence" when it stayed open for the timeout).
func exchange(ctx context.Context, o *Options, req []byte) (*decode.MPAFrame, string, error) {
	d := net.Dialer{Timeout: o.Timeout}
	c, err := d.DialContext(ctx, "tcp", o.Addr)
	if err != nil {
		return nil, "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(o.Timeout))
	if _, err := c.Write(req); err != nil {
		return nil, endOf(err), nil
	}
	var buf []byte
	var rep *decode.MPAFrame
	tmp := make([]byte, 1024)
	for {
		n, err := c.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if rep == nil {
			var f decode.MPAFrame
			if m, perr := decode.ParseMPAFrame(buf, &f); perr == nil && f.Reply {
				rep = &f
				buf = buf[m:]
				if !f.Reject {
					return rep, "open", nil
				}
			}
		}
		if err != nil {
			return rep, endOf(err), nil
		}
	}
}

func endOf(err error) string {
	if err == io.EOF {
		return "FIN"
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return "silence"
	}
	return "reset"
}

// irdOrd: RFC 6581 §9.1: the Responder's ORD must not exceed the
// Initiator's IRD; an Initiator value of 0x3FFF (no negotiation) must be
// echoed in the paired field.
func irdOrd(ird, ord uint16) func(ctx context.Context, o *Options, ln *endpoint.Listener) (string, string, string) {
	return func(ctx context.Context, o *Options, ln *endpoint.Listener) (got, verdict, reason string) {
		if ln != nil || o.Config.Rev == 1 {
			return "n/a", Skip, "needs an MPA v2 Request of ours (dialing)"
		}
		rep, end, err := exchange(ctx, o, baseRequest(o, decode.MPAv2{IRD: ird, ORD: ord}))
		if err != nil {
			return "no connection", Error, err.Error()
		}
		if rep == nil || rep.Reject || !rep.HasV2 {
			return fmt.Sprintf("no accepting v2 Reply (%s)", end), Fail, "the Request was valid"
		}
		got = fmt.Sprintf("Reply IRD %#x ORD %#x", rep.V2.IRD, rep.V2.ORD)
		none := uint16(decode.MPAv2NoNegotiation)
		switch {
		case ird == none && rep.V2.ORD != none, ord == none && rep.V2.IRD != none:
			return got, Fail, "0x3FFF (no negotiation) not echoed in the paired field (RFC 6581 §9.1)"
		case ird != none && rep.V2.ORD > ird:
			return got, Fail, fmt.Sprintf("Responder ORD %d above our IRD %d (RFC 6581 §9.1)", rep.V2.ORD, ird)
		}
		return got, Pass, ""
	}
}
