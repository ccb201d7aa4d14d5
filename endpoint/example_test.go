package endpoint_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// The verbs in order over loopback: each side opens a device, allocates a
// PD, creates a CQ and a QP, and registers memory; the passive side
// advertises its buffer (STag and address) in the MPA Reply's Private
// Data; the active side connects, RDMA Writes into the buffer, RDMA Reads
// it back, and polls the CQ for each completion.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The passive side: a buffer the peer may write and read.
	sdev := endpoint.OpenDevice(endpoint.DeviceAttr{})
	spd := sdev.AllocPD()
	scq, _ := sdev.CreateCQ(16)
	sqp, _ := spd.CreateQP(endpoint.QPAttr{SendCQ: scq, RecvCQ: scq})
	target, _ := spd.RegisterMR(make([]byte, 64), endpoint.AccessLocalRead|endpoint.AccessLocalWrite|
		endpoint.AccessRemoteWrite|endpoint.AccessRemoteRead, nil)
	ln, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &endpoint.Config{CRC: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		req, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		adv := binary.BigEndian.AppendUint32(nil, uint32(target.STag()))
		adv = binary.BigEndian.AppendUint64(adv, target.Addr())
		conn, err := req.Accept(sqp, adv)
		if err != nil {
			return
		}
		<-conn.QP().Done() // until the active side closes
	}()

	// The active side: register, connect, learn the peer's buffer.
	dev := endpoint.OpenDevice(endpoint.DeviceAttr{})
	pd := dev.AllocPD()
	cq, _ := dev.CreateCQ(16)
	qp, _ := pd.CreateQP(endpoint.QPAttr{SendCQ: cq, RecvCQ: cq})
	// An RDMA Read's sink is named in the Read Request (its Data Sink
	// STag, RFC 5040 §4.4) and placed by the peer's tagged Read
	// Responses: it needs Remote Write.
	local, _ := pd.RegisterMR(make([]byte, 64), endpoint.AccessLocalRead|endpoint.AccessLocalWrite|endpoint.AccessRemoteWrite, nil)
	conn, err := endpoint.Dial(ctx, "tcp", ln.Addr().String(), qp, &endpoint.Config{CRC: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	adv := conn.Params().PeerPrivateData
	rkey, raddr := endpoint.STag(binary.BigEndian.Uint32(adv)), binary.BigEndian.Uint64(adv[4:])

	// poll waits for the next completion.
	wcs := make([]endpoint.WorkCompletion, 1)
	poll := func() endpoint.WorkCompletion {
		if _, err := cq.Wait(ctx, wcs); err != nil {
			fmt.Println(err)
		}
		return wcs[0]
	}

	// RDMA Write 12 octets into the peer's buffer.
	msg := "hello, iWARP"
	copy(local.Buf(), msg)
	local.Sync()
	qp.PostSend(endpoint.SendWR{WRID: 1, Opcode: endpoint.OpWrite, Signaled: true,
		SGL: []endpoint.SGE{local.SGE(0, len(msg))}, RemoteAddr: raddr, RKey: rkey})
	wc := poll()
	fmt.Println(wc.WRID, wc.Opcode, wc.Status)

	// RDMA Read them back into the second half of ours.
	qp.PostSend(endpoint.SendWR{WRID: 2, Opcode: endpoint.OpRead, Signaled: true,
		SGL: []endpoint.SGE{local.SGE(32, len(msg))}, RemoteAddr: raddr, RKey: rkey})
	wc = poll()
	local.Sync()
	fmt.Println(wc.WRID, wc.Opcode, wc.Status, string(local.Buf()[32:32+len(msg)]))

	conn.Close()
	<-served
	// Output:
	// 1 RDMAWrite Success
	// 2 RDMARead Success hello, iWARP
}
