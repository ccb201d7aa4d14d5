package endpoint

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// sendOne Sends 16 octets from cl to sv and checks they arrive.
func sendOne(t *testing.T, cl, sv *side) {
	t.Helper()
	rmr, rbuf := sv.reg(t, 64, AccessLocalWrite)
	if _, err := sv.qp.PostRecv(RecvWR{WRID: 1, SGL: []SGE{rmr.SGE(0, 64)}}); err != nil {
		t.Fatal(err)
	}
	smr, sbuf := cl.reg(t, 16, AccessLocalRead)
	copy(sbuf, "erdma or v1 data")
	if _, err := cl.qp.PostSend(SendWR{WRID: 2, Opcode: OpSend, Signaled: true, SGL: []SGE{smr.SGE(0, 16)}}); err != nil {
		t.Fatal(err)
	}
	cl.waitOK(t, OpSend)
	sv.waitOK(t, OpRecv)
	mustEqual(t, "received", rbuf[:16], sbuf)
}

// TestERDMAConnection: both ends configured for Alibaba erdma's MPA (Rev
// 129) exchange frames with the extension and run FPDUs after them.
func TestERDMAConnection(t *testing.T) {
	cliExt := decode.MPAERDMAExt{Cookie: 0x11223344, Bits: 1}
	srvExt := decode.MPAERDMAExt{Cookie: 0x55667788, Bits: 2}
	cl, sv := connect(t, pairOpts{
		client: Config{Rev: decode.MPARevERDMA, ERDMA: cliExt, PrivateData: []byte("pd")},
		server: Config{Rev: decode.MPARevERDMA, ERDMA: srvExt},
	})
	p, q := cl.conn.Params(), sv.conn.Params()
	if !p.ERDMA || !q.ERDMA || p.PeerERDMA != srvExt || q.PeerERDMA != cliExt || p.Enhanced {
		t.Fatalf("params: initiator %+v, responder %+v", p, q)
	}
	var f decode.MPAFrame
	if _, err := decode.ParseMPAFrame(p.Request, &f); err != nil || !f.ERDMA || f.ERDMAExt != cliExt || !bytes.Equal(f.PrivateData, []byte("pd")) {
		t.Fatalf("Request %x: %+v %v", p.Request, f, err)
	}
	if _, err := decode.ParseMPAFrame(p.Reply, &f); err != nil || !f.ERDMA || f.ERDMAExt != srvExt {
		t.Fatalf("Reply %x: %+v %v", p.Reply, f, err)
	}
	sendOne(t, cl, sv)
}

// TestERDMANamedWhenNotConfigured: an Initiator not configured for erdma
// that gets a Rev 129 Reply fails with an MPAError that names erdma.
func TestERDMANamedWhenNotConfigured(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 64)
		c.Read(b)
		rep := decode.MPAFrame{Reply: true, Rev: decode.MPARevERDMA, ERDMA: true, ERDMAExt: decode.MPAERDMAExt{Cookie: 9, Bits: 3}}
		c.Write(rep.Append(nil))
		time.Sleep(100 * time.Millisecond)
	}()
	cl := newSide(t, QPAttr{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = Dial(ctx, "tcp", ln.Addr().String(), cl.qp, &Config{})
	var me *MPAError
	if !errors.As(err, &me) || !me.ERDMA {
		t.Fatalf("err %v, want an MPAError naming erdma", err)
	}
}

// TestV1Fallback: a Responder that resets MPA v2 Requests (RefuseV2) and an
// Initiator with FallbackV1: the Initiator retries with Rev 1 and the
// Responder accepts it. Without FallbackV1 the Dial fails.
func TestV1Fallback(t *testing.T) {
	for _, fallback := range []bool{true, false} {
		cl, sv := newSide(t, QPAttr{}), newSide(t, QPAttr{})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		l, err := Listen(ctx, "tcp", "127.0.0.1:0", &Config{RefuseV2: true})
		if err != nil {
			t.Fatal(err)
		}
		// The refusal and the retry are two connections: the Listener
		// may hand the retry's Request out before the refusal's error
		// (each connection's Request is read on its own goroutine), so
		// the loop takes both, in either order.
		refused, accepted := make(chan error, 1), make(chan error, 1)
		go func() {
			var sawRefusal, sawRetry bool
			for !(sawRefusal && sawRetry) {
				req, err := l.Accept(ctx)
				if err != nil {
					var me *MPAError
					if !errors.As(err, &me) || sawRefusal {
						if !sawRefusal {
							refused <- err
						}
						if !sawRetry {
							accepted <- err
						}
						return
					}
					sawRefusal = true
					refused <- err
					continue
				}
				sawRetry = true
				sv.conn, err = req.Accept(sv.qp, nil)
				accepted <- err
			}
		}()
		c, err := Dial(ctx, "tcp", l.Addr().String(), cl.qp, &Config{Rev: 2, FallbackV1: fallback})
		if !fallback {
			if err == nil || !aborted(err) {
				t.Errorf("without FallbackV1: %v, want the reset", err)
			}
			l.Close()
			cancel()
			continue
		}
		if err != nil {
			t.Fatalf("Dial with FallbackV1: %v", err)
		}
		if e := <-refused; e == nil || !bytes.Contains([]byte(e.Error()), []byte("RefuseV2")) {
			t.Fatalf("refusing the v2 Request: %v, want the refusal", e)
		}
		if e := <-accepted; e != nil {
			t.Fatalf("accepting the retry: %v", e)
		}
		cl.conn = c
		p := c.Params()
		if !p.FellBackV1 || p.Rev != 1 || p.Enhanced || p.FallbackCost <= 0 {
			t.Errorf("params %+v", p)
		}
		sendOne(t, cl, sv)
		cl.conn.Close()
		sv.conn.Close()
		l.Close()
		cancel()
	}
}
