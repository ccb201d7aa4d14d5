package endpoint

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"
)

// side is one endpoint of a test connection.
type side struct {
	dev  *Device
	pd   *PD
	cq   *CQ
	qp   *QP
	conn *Conn
}

func newSide(t testing.TB, attr QPAttr) *side {
	t.Helper()
	return newSideOn(t, OpenDevice(DeviceAttr{}), attr)
}

// newSideOn is newSide on a device the test opened.
func newSideOn(t testing.TB, dev *Device, attr QPAttr) *side {
	t.Helper()
	pd := dev.AllocPD()
	cq, err := dev.CreateCQ(1 << 14)
	if err != nil {
		t.Fatal(err)
	}
	attr.SendCQ, attr.RecvCQ = cq, cq
	qp, err := pd.CreateQP(attr)
	if err != nil {
		t.Fatal(err)
	}
	return &side{dev: dev, pd: pd, cq: cq, qp: qp}
}

func (s *side) reg(t testing.TB, n int, acc Access) (*MR, []byte) {
	t.Helper()
	buf := make([]byte, n)
	mr, err := s.pd.RegisterMR(buf, acc, nil)
	if err != nil {
		t.Fatal(err)
	}
	return mr, buf
}

// wait returns the next completion or fails the test.
func (s *side) wait(t testing.TB) WorkCompletion {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wc [1]WorkCompletion
	if _, err := s.cq.Wait(ctx, wc[:]); err != nil {
		t.Fatalf("qp %d: waiting for a completion: %v (state %v, err %v)", s.qp.num, err, s.qp.State(), s.qp.Err())
	}
	return wc[0]
}

func (s *side) waitOK(t testing.TB, op Opcode) WorkCompletion {
	t.Helper()
	wc := s.wait(t)
	if wc.Status != StatusSuccess || wc.Opcode != op {
		t.Fatalf("qp %d: completion %v %v (want %v Success), err %v; qp err %v", s.qp.num, wc.Opcode, wc.Status, op, wc.Err, s.qp.Err())
	}
	return wc
}

type pairOpts struct {
	client, server      Config
	clientAttr, srvAttr QPAttr
	clientPrep, srvPrep func(*side)
	listenerCfg         *Config
	serverPrivateData   []byte
}

// connect makes two connected endpoints over loopback TCP.
func connect(t testing.TB, o pairOpts) (cl, sv *side) {
	t.Helper()
	cl, sv = newSide(t, o.clientAttr), newSide(t, o.srvAttr)
	connectSides(t, o, cl, sv)
	return cl, sv
}

// connectSides connects two sides the test made.
func connectSides(t testing.TB, o pairOpts, cl, sv *side) {
	t.Helper()
	if o.clientPrep != nil {
		o.clientPrep(cl)
	}
	if o.srvPrep != nil {
		o.srvPrep(sv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, accepted := acceptOne(t, ctx, o.server, sv, o.serverPrivateData)
	defer l.Close()
	cfg := o.client
	var err error
	cl.conn, err = Dial(ctx, "tcp", l.Addr().String(), cl.qp, &cfg)
	serr := accepted()
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if serr != nil {
		t.Fatalf("accept: %v", serr)
	}
	t.Cleanup(func() {
		cl.conn.Close()
		sv.conn.Close()
	})
}

// acceptOne listens on loopback with cfg and accepts one connection into
// sv's QP, with private data pd, in the background; accepted waits for
// it. The caller closes l.
func acceptOne(t testing.TB, ctx context.Context, cfg Config, sv *side, pd []byte) (l *Listener, accepted func() error) {
	t.Helper()
	l, err := Listen(ctx, "tcp", "127.0.0.1:0", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err == nil {
			sv.conn, err = req.Accept(sv.qp, pd)
		}
		done <- err
	}()
	return l, func() error { return <-done }
}

func fillRand(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := 0; i+8 <= len(b); i += 8 {
		v := r.Uint64()
		for k := 0; k < 8; k++ {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(r.Uint32())
	}
}

func mustEqual(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: data differs at octet %d of %d/%d", what, i, len(got), len(want))
	}
}

var _ = fmt.Sprintf
var _ net.Conn
