package endpoint

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// QPAttr are the attributes of a new QP (V00 §6). Zero fields take defaults.
type QPAttr struct {
	SendCQ, RecvCQ *CQ // required; may be the same CQ
	// SRQ, when set, supplies the QP's receives (PostRecv on the QP is then
	// an error); it must be of the QP's PD.
	SRQ     *SRQ
	SQDepth int // work requests the SQ holds (1024)
	RQDepth int // work requests the RQ holds (1024)
	MaxSGE  int // SGEs per work request (device MaxSGE)
	// IRD and ORD are the inbound and outbound RDMA Read queue depths
	// offered in the MPA v2 negotiation (16 each, at most the device's).
	IRD, ORD int
	// DisableRemoteRead and DisableRemoteWrite clear the QP's enable bits
	// for inbound RDMA Read, and inbound RDMA Write + Read Response.
	DisableRemoteRead  bool
	DisableRemoteWrite bool
	// Privileged enables the privileged work requests: Fast-Register
	// (V00 §6.1: "STag 0 + Fast-Register enable").
	Privileged bool
	// RFC7306 enables the RFC 7306 Atomic Operations and Immediate Data on
	// the QP, both ways. The ULP agrees on it with its peer; nothing on the
	// wire does (RFC 7306 §1.1). Without it the QP posts none of them and
	// answers each incoming one with the Terminate of a peer without the
	// extensions, Remote Operation Error / Unexpected OpCode (0x0/0x2/0x06).
	RFC7306 bool
	// OnReadRequest, when set, is called by the receive engine with each
	// inbound RDMA Read Request that passed the checks, before it is
	// answered: its Data Sink is a valid STag of the peer with Remote
	// Write (how iwconform learns one from an rping server). It must not
	// block.
	OnReadRequest func(decode.ReadRequest)
	// DrainTimeout bounds how long the QP waits for the peer to close the
	// LLP after a Terminate or a graceful close, and how long a Terminate
	// may take to write (2 s).
	DrainTimeout time.Duration
}

type sqe struct {
	wr      SendWR
	sgl     []SGE
	started bool
	done    bool
	status  Status
	err     error
}

type rqe struct {
	wr    RecvWR
	parts [][]byte // resolved scatter list
	mrs   []*MR    // the region of each part, pinned while placing
	keys  []STag   // the STag each part was resolved with
	size  uint64
}

// orqEntry is an outstanding outbound RDMA Read (ORQ, counted against ORD).
type orqEntry struct {
	wqe  *sqe // nil for the Read RTR
	sink STag
	to   uint64
	size uint64
	got  uint64

	atomic bool   // an RFC 7306 Atomic Request, answered by an Atomic Response
	reqID  uint32 // its Request Identifier
}

// irrqEntry is an accepted inbound RDMA Read Request (IRRQ, counted against
// IRD) waiting to be answered.
type irrqEntry struct {
	req  decode.ReadRequest
	hdr  [decode.DDPUntaggedHdrLen]byte // its DDP header, for a Terminate
	sent uint64                         // response octets sent so far

	atomic *decode.AtomicRequest // an RFC 7306 Atomic Request instead of req
}

// Counters are a QP's traffic counters.
type Counters struct {
	TxFPDUs, RxFPDUs           uint64
	TxOctets, RxOctets         uint64 // FPDU octets on the wire (Tx: as handed to TCP)
	TxPayload, RxPayload       uint64 // ULP payload octets
	TxSends, RxSends           uint64
	TxWrites, RxWrites         uint64 // RDMA Write messages
	TxReadReqs, RxReadReqs     uint64
	TxReadResps, RxReadResps   uint64 // Read Response messages
	TxTerminates, RxTerminates uint64
	CRCErrors                  uint64
	MarkerErrors               uint64
	ReadStalls                 uint64 // RDMA Reads held back by ORD

	// RFC 7306 messages.
	TxAtomicReqs, RxAtomicReqs   uint64
	TxAtomicResps, RxAtomicResps uint64
	TxImmData, RxImmData         uint64
}

type counters struct {
	txFPDUs, rxFPDUs           atomic.Uint64
	txOctets, rxOctets         atomic.Uint64
	txPayload, rxPayload       atomic.Uint64
	txSends, rxSends           atomic.Uint64
	txWrites, rxWrites         atomic.Uint64
	txReadReqs, rxReadReqs     atomic.Uint64
	txReadResps, rxReadResps   atomic.Uint64
	txTerminates, rxTerminates atomic.Uint64
	crcErrors, markerErrors    atomic.Uint64
	readStalls                 atomic.Uint64

	txAtomicReqs, rxAtomicReqs   atomic.Uint64
	txAtomicResps, rxAtomicResps atomic.Uint64
	txImmData, rxImmData         atomic.Uint64
}

// QP is a queue pair: a Send Queue, a Receive Queue and the inbound RDMA
// Read queue, bound to one MPA stream once in RTS (V00 §6).
type QP struct {
	dev  *Device
	pd   *PD
	num  uint32
	attr QPAttr

	mu        sync.Mutex
	state     QPState
	sq        []*sqe // posted and not yet completed, in order
	sqNext    int    // index in sq of the next WR to start
	rq        []*rqe
	orq       []*orqEntry
	irrq      []*irrqEntry // accepted, not yet being answered
	irrqBusy  int          // accepted and not completely answered
	ird, ord  int
	term      *TermInfo
	termOut   *decode.Terminate // Terminate for the send engine
	err       error
	gateOpen  bool
	rtrOut    rtrType // initiator: RTR still to send
	rtrIn     uint8   // responder: RTR types accepted before the first FPDU (bit set)
	txStop    bool
	remoteFin bool
	termWhy   uint8 // why the QP went to Terminate: termAsync, termCQE, termModify
	llpErr    bool  // an LLP error happened in Terminate (V00 §6.2.3: Bad Close)
	rqLimit   int   // RQ limit event armed below this many receives (0: off)
	evq       []AsyncEvent

	s        *stream
	conn     *Conn
	txMu     sync.Mutex
	txs      txState
	lastPost time.Time
	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	txDone   chan struct{}

	// engine-only state (send engine: sendMSN; receive engine: the rest)
	sendMSN [4]uint32 // next MSN on QN 0, 1 and 3 (RFC 7306 Atomic Responses)
	recvMSN [4]uint32 // expected MSN on QN 0, 1, 2, 3
	cur     *rqe      // receive in progress on QN 0
	curMSN  uint32
	curLen  uint64

	cnt counters

	destroyed    bool          // guarded by mu
	faults       []Fault       // injected, not yet used (guarded by mu)
	noORD        bool          // FaultExceedORD (guarded by mu)
	firstTimeout time.Duration // Responder: bound on the wait for the first FPDU
	onFlush      func(int)     // tests: called with each batch's size
}

// CreateQP creates a QP in Idle on pd.
func (pd *PD) CreateQP(attr QPAttr) (*QP, error) {
	d := pd.dev
	if attr.SendCQ == nil || attr.RecvCQ == nil {
		return nil, fmt.Errorf("%w: QP needs a send and a receive CQ", ErrInvalidWR)
	}
	if attr.SRQ != nil && attr.SRQ.pd != pd {
		return nil, fmt.Errorf("%w: SRQ of another PD", ErrInvalidWR)
	}
	def := func(v *int, dv, mx int) {
		if *v <= 0 {
			*v = dv
		}
		*v = min(*v, mx)
	}
	def(&attr.SQDepth, 1024, d.attr.MaxWR)
	def(&attr.RQDepth, 1024, d.attr.MaxWR)
	def(&attr.MaxSGE, d.attr.MaxSGE, d.attr.MaxSGE)
	if attr.IRD < 0 || attr.ORD < 0 {
		return nil, fmt.Errorf("%w: negative IRD/ORD", ErrInvalidWR)
	}
	if attr.IRD == 0 {
		attr.IRD = 16
	}
	if attr.ORD == 0 {
		attr.ORD = 16
	}
	attr.IRD = min(attr.IRD, d.attr.MaxIRD)
	attr.ORD = min(attr.ORD, d.attr.MaxORD)
	if attr.DrainTimeout <= 0 {
		attr.DrainTimeout = 2 * time.Second
	}
	if int(d.nQP.Add(1)) > d.attr.MaxQP {
		d.nQP.Add(-1)
		return nil, ErrTooManyQPs
	}
	qp := &QP{dev: d, pd: pd, num: d.nextQP.Add(1), attr: attr, ird: attr.IRD, ord: attr.ORD}
	attr.SendCQ.users.Add(1)
	attr.RecvCQ.users.Add(1)
	if attr.SRQ != nil {
		attr.SRQ.users.Add(1)
	}
	d.mu.Lock()
	d.qps[qp] = struct{}{}
	d.mu.Unlock()
	return qp, nil
}

// Destroy destroys the QP (V00 §6.1 Destroy QP); it fails with
// ErrResourceBusy while type 2 windows are bound to it (V00 §6.2.4:
// invalidate or deallocate them first). A connected QP is reset
// (LLP reset, QP to Error, every WR flushed) and Destroy waits for its
// engines to end; then the QP no longer counts against MaxQP and every verb
// on it fails with ErrClosed. Regions scoped to it stay registered but no
// stream can use them.
func (qp *QP) Destroy() error {
	if n := qp.boundWindows(); n > 0 {
		return fmt.Errorf("%w: %d memory windows bound to the QP", ErrResourceBusy, n)
	}
	qp.mu.Lock()
	if qp.destroyed {
		qp.mu.Unlock()
		return ErrClosed
	}
	qp.destroyed = true
	done := qp.done
	qp.unlock()
	if done != nil {
		qp.abort(errors.New("endpoint: QP destroyed"), EventErrorStateEntered)
		<-done
	}
	qp.mu.Lock()
	if qp.state == StateIdle {
		qp.state = StateError
	}
	qp.flushLocked(StatusFlushed)
	qp.unlock()
	d := qp.dev
	d.mu.Lock()
	delete(d.qps, qp)
	d.mu.Unlock()
	d.nQP.Add(-1)
	qp.attr.SendCQ.users.Add(-1)
	qp.attr.RecvCQ.users.Add(-1)
	if qp.attr.SRQ != nil {
		qp.attr.SRQ.users.Add(-1)
	}
	return nil
}

// boundWindows counts the Valid type 2 windows that belong to the QP: V00
// §6.2.4 (destruction fails while windows are bound to the QP).
func (qp *QP) boundWindows() int {
	d := qp.dev
	var wins []*MR
	d.mu.RLock()
	for _, r := range d.mrs {
		if r != nil && r.mwType == MWType2 {
			wins = append(wins, r)
		}
	}
	d.mu.RUnlock()
	n := 0
	for _, w := range wins {
		w.pin.RLock()
		if w.valid && w.qp == qp {
			n++
		}
		w.pin.RUnlock()
	}
	return n
}

// Num is the QP number.
func (qp *QP) Num() uint32 { return qp.num }

// PD is the QP's protection domain.
func (qp *QP) PD() *PD { return qp.pd }

// Attr returns the attributes the QP was created with (after defaults).
func (qp *QP) Attr() QPAttr { return qp.attr }

// State is the QP's current state.
func (qp *QP) State() QPState {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.state
}

// IRDORD returns the QP's IRD and ORD, as negotiated once connected.
func (qp *QP) IRDORD() (ird, ord int) {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.ird, qp.ord
}

// SetIRDORD changes IRD and ORD while Idle (before connecting).
func (qp *QP) SetIRDORD(ird, ord int) error {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.state != StateIdle || ird < 0 || ord < 0 || ird > qp.dev.attr.MaxIRD || ord > qp.dev.attr.MaxORD {
		return ErrInvalidState
	}
	qp.ird, qp.ord = ird, ord
	qp.attr.IRD, qp.attr.ORD = ird, ord
	return nil
}

// SetRQLimit arms the QP's RQ limit event (V00 §6.3, Fig. 37): once a
// message leaves fewer than n receives posted, the device's AsyncEvent gets
// one EventRQLimitReached and the limit disarms. 0 disarms it. A QP on an
// SRQ has no RQ of its own (SRQ.SetLimit).
func (qp *QP) SetRQLimit(n int) error {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.destroyed {
		return ErrClosed
	}
	if n < 0 || n > qp.attr.RQDepth || qp.attr.SRQ != nil {
		return fmt.Errorf("%w: RQ limit %d", ErrInvalidWR, n)
	}
	qp.rqLimit = n
	return nil
}

// Terminate returns the Terminate the QP sent or received, if any.
func (qp *QP) Terminate() *TermInfo {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.term == nil {
		return nil
	}
	t := *qp.term
	return &t
}

// Err is why the QP left RTS: a *TerminateError, ErrBadLLPClose, an LLP
// error; nil while in RTS and after a normal close.
func (qp *QP) Err() error {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.err
}

// Done is closed when the QP's connection is over (the QP reached Error, or
// Idle after a normal close) and every work request was completed or
// flushed. It is nil before the QP was connected.
func (qp *QP) Done() <-chan struct{} {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.done
}

// Counters returns a snapshot of the QP's counters.
func (qp *QP) Counters() Counters {
	c := &qp.cnt
	return Counters{
		TxFPDUs: c.txFPDUs.Load(), RxFPDUs: c.rxFPDUs.Load(),
		TxOctets: c.txOctets.Load(), RxOctets: c.rxOctets.Load(),
		TxPayload: c.txPayload.Load(), RxPayload: c.rxPayload.Load(),
		TxSends: c.txSends.Load(), RxSends: c.rxSends.Load(),
		TxWrites: c.txWrites.Load(), RxWrites: c.rxWrites.Load(),
		TxReadReqs: c.txReadReqs.Load(), RxReadReqs: c.rxReadReqs.Load(),
		TxReadResps: c.txReadResps.Load(), RxReadResps: c.rxReadResps.Load(),
		TxTerminates: c.txTerminates.Load(), RxTerminates: c.rxTerminates.Load(),
		CRCErrors: c.crcErrors.Load(), MarkerErrors: c.markerErrors.Load(),
		ReadStalls: c.readStalls.Load(),

		TxAtomicReqs: c.txAtomicReqs.Load(), RxAtomicReqs: c.rxAtomicReqs.Load(),
		TxAtomicResps: c.txAtomicResps.Load(), RxAtomicResps: c.rxAtomicResps.Load(),
		TxImmData: c.txImmData.Load(), RxImmData: c.rxImmData.Load(),
	}
}

// unlock releases qp.mu and then delivers queued async events.
func (qp *QP) unlock() {
	evs := qp.evq
	qp.evq = nil
	qp.mu.Unlock()
	if h := qp.dev.attr.AsyncEvent; h != nil {
		for _, e := range evs {
			h(e)
		}
	}
}

func (qp *QP) eventLocked(t AsyncEventType, err error) {
	if qp.dev.attr.AsyncEvent != nil {
		qp.evq = append(qp.evq, AsyncEvent{Type: t, QP: qp, State: qp.state, Err: err})
	}
}

func (qp *QP) kickTx() {
	if qp.kick != nil {
		select {
		case qp.kick <- struct{}{}:
		default:
		}
	}
}

// PostSend posts work requests to the SQ in order. The first Immediate
// Error stops the list; n says how many were posted. In Idle they wait for
// RTS; in Terminate and Error they complete at once as Flushed.
func (qp *QP) PostSend(wrs ...SendWR) (n int, err error) {
	qp.mu.Lock()
	defer qp.unlock()
	// Inline only when the SQ is idle and posts are not coming in a burst:
	// a ping-pong posts one WR per round trip, a bandwidth loop posts many
	// within microseconds and is better served by the engine's batching.
	now := time.Now()
	idle := len(qp.sq) == 0 && now.Sub(qp.lastPost) > 30*time.Microsecond
	qp.lastPost = now
	if qp.destroyed {
		return 0, ErrClosed
	}
	badClose := false
	for i := range wrs {
		wr := &wrs[i]
		if err = qp.checkSendWR(wr); err != nil {
			break
		}
		if qp.state == StateTerminate || qp.state == StateError {
			qp.attr.SendCQ.push(WorkCompletion{WRID: wr.WRID, Opcode: wr.Opcode, Status: StatusFlushed, QPNum: qp.num})
			n++
			continue
		}
		if len(qp.sq) >= qp.attr.SQDepth {
			err = ErrQueueFull
			break
		}
		w := &sqe{wr: *wr}
		w.sgl = append([]SGE(nil), wr.SGL...)
		w.wr.SGL = nil
		qp.sq = append(qp.sq, w)
		n++
		// In Closing: enqueue, flush, LLP reset and Bad Close (V00
		// §6.2.5, Fig. 11); the WR completes as Flushed in Error.
		badClose = badClose || qp.state == StateClosing
	}
	if badClose {
		qp.unlock()
		qp.abort(ErrBadLLPClose, EventBadClose)
		qp.mu.Lock()
		return n, err
	}
	if err != nil {
		return n, err
	}
	// An idle SQ: put the WRs out from this goroutine (latency). With work
	// in flight the engine batches them into fewer writes (bandwidth).
	if idle && qp.state == StateRTS && qp.gateOpen && qp.s != nil {
		s := qp.s
		qp.unlock()
		qp.txInline(s)
		qp.mu.Lock()
		return n, nil
	}
	qp.kickTx()
	return n, nil
}

func (qp *QP) checkSendWR(wr *SendWR) error {
	switch {
	case wr.Opcode <= OpRead, wr.Opcode == OpReadInv:
	case wr.Opcode == OpBindMW:
		if wr.Bind == nil || wr.Bind.MW == nil || wr.Bind.MR == nil || len(wr.SGL) != 0 {
			return fmt.Errorf("%w: Bind needs SendWR.Bind with a window and a region, and no SGL", ErrInvalidWR)
		}
	case wr.Opcode == OpLocalInv:
		if len(wr.SGL) != 0 {
			return fmt.Errorf("%w: Invalidate Local STag takes no SGL", ErrInvalidWR)
		}
	case wr.Opcode == OpFastReg:
		if wr.FastReg == nil || wr.FastReg.MR == nil || len(wr.SGL) != 0 {
			return fmt.Errorf("%w: Fast-Register needs SendWR.FastReg with a region, and no SGL", ErrInvalidWR)
		}
	case wr.Opcode.is7306():
		if err := qp.check7306WR(wr); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: opcode %v", ErrInvalidWR, wr.Opcode)
	}
	if len(wr.SGL) > qp.attr.MaxSGE {
		return fmt.Errorf("%w: %d SGEs > %d", ErrInvalidWR, len(wr.SGL), qp.attr.MaxSGE)
	}
	if wr.Opcode.isRead() && len(wr.SGL) != 1 {
		return fmt.Errorf("%w: an RDMA Read takes exactly one local SGE", ErrInvalidWR)
	}
	var tot uint64
	for _, s := range wr.SGL {
		tot += uint64(s.Length)
	}
	if tot > uint64(qp.dev.attr.MaxMsgLen) || tot > 1<<32-1 {
		return fmt.Errorf("%w: message of %d octets too long", ErrInvalidWR, tot)
	}
	return nil
}

// PostRecv posts receive buffers. Each SGE must name local memory with Local
// Write; the scatter list is resolved when posted.
func (qp *QP) PostRecv(wrs ...RecvWR) (n int, err error) {
	qp.mu.Lock()
	defer qp.unlock()
	if qp.destroyed {
		return 0, ErrClosed
	}
	if qp.attr.SRQ != nil {
		return 0, fmt.Errorf("%w: the QP's receives come from its SRQ", ErrInvalidWR)
	}
	for i := range wrs {
		wr := &wrs[i]
		if len(wr.SGL) > qp.attr.MaxSGE {
			return n, fmt.Errorf("%w: %d SGEs > %d", ErrInvalidWR, len(wr.SGL), qp.attr.MaxSGE)
		}
		if qp.state == StateTerminate || qp.state == StateError || qp.state == StateClosing {
			qp.attr.RecvCQ.push(WorkCompletion{WRID: wr.WRID, Opcode: OpRecv, Status: StatusFlushed, QPNum: qp.num})
			n++
			continue
		}
		if len(qp.rq) >= qp.attr.RQDepth {
			return n, ErrQueueFull
		}
		r, err := resolveRecv(qp.pd, qp, wr)
		if err != nil {
			return n, err
		}
		qp.rq = append(qp.rq, r)
		n++
	}
	return n, nil
}

// completeSQLocked retires finished WRs from the head of the SQ in order
// (each work queue completes in order, V00 §8.2.2).
func (qp *QP) completeSQLocked() {
	k := 0
	for k < len(qp.sq) && qp.sq[k].done {
		w := qp.sq[k]
		if w.wr.Signaled || w.status != StatusSuccess {
			qp.pushLocked(qp.attr.SendCQ, WorkCompletion{WRID: w.wr.WRID, Opcode: w.wr.Opcode, Status: w.status, QPNum: qp.num, Err: w.err})
		}
		qp.sq[k] = nil
		k++
	}
	if k > 0 {
		qp.sq = qp.sq[k:]
		qp.sqNext -= k
		if len(qp.sq) == 0 {
			qp.sq = nil
		}
	}
}

func (qp *QP) pushLocked(cq *CQ, wc WorkCompletion) {
	if !cq.push(wc) && qp.state == StateRTS {
		qp.terminateLocked(localTerm(0x0, 0x2, 0x07, "completion queue overflow"), nil, 0)
	}
}

// flushLocked completes everything still queued (V00 §6.2.3): the first
// unfinished SQ WR gets headStatus (RemoteTermination after a received
// Terminate), the rest Flushed, signaled or not.
func (qp *QP) flushLocked(headStatus Status) {
	first := true
	for _, w := range qp.sq {
		if !w.done {
			w.done = true
			w.status = StatusFlushed
			if first && w.started && headStatus != StatusFlushed {
				w.status = headStatus
			}
			first = false
		}
	}
	qp.completeSQLocked()
	for _, r := range qp.rq {
		qp.attr.RecvCQ.push(WorkCompletion{WRID: r.wr.WRID, Opcode: OpRecv, Status: StatusFlushed, QPNum: qp.num})
	}
	qp.rq = nil
	if r := qp.cur; r != nil && qp.attr.SRQ != nil {
		// A receive the SRQ handed to a message in progress is this QP's
		// to complete.
		qp.attr.RecvCQ.push(WorkCompletion{WRID: r.wr.WRID, Opcode: OpRecv, Status: StatusFlushed, QPNum: qp.num})
	}
	qp.orq, qp.irrq, qp.irrqBusy = nil, nil, 0
	qp.cur = nil
}

func localTerm(layer, etype, code uint8, reason string) TermInfo {
	t := decode.Terminate{Layer: layer, EType: etype, Code: code}
	return TermInfo{Local: true, Cause: decode.LookupTermCause(layer, etype, code), Header: t, Reason: reason}
}

// Why a QP entered Terminate (V00 §6.2.3 decides the async events by it).
const (
	termAsync  = iota // an incoming segment or a local failure no completion reports
	termCQE           // an error reported in a work completion
	termModify        // Modify QP to Terminate
)

// terminateLocked moves an RTS QP to Terminate. A local Terminate is handed
// to the send engine; wqe, if any, completes with st. The caller sets
// qp.termWhy first when the cause is reported otherwise than by an async
// error. In Closing an error, or a Terminate that arrives, takes the QP to
// Error with an LLP reset and Bad Close instead (V00 §6.2.5, Fig. 11); the
// Terminate stays readable.
func (qp *QP) terminateLocked(ti TermInfo, wqe *sqe, st Status) {
	if qp.state != StateRTS && qp.state != StateClosing {
		return
	}
	qp.term = &ti
	qp.err = &TerminateError{Info: ti}
	if wqe != nil && !wqe.done {
		wqe.done, wqe.status, wqe.err = true, st, qp.err
		qp.completeSQLocked()
		qp.termWhy = termCQE
	}
	if qp.state == StateClosing {
		qp.state = StateError
		qp.eventLocked(EventBadClose, qp.err)
		if s := qp.s; s != nil {
			reset(s.c)
		}
		return
	}
	qp.state = StateTerminate
	if ti.Local {
		h := ti.Header
		qp.termOut = &h
		if qp.termWhy == termAsync {
			qp.eventLocked(EventTerminateSent, qp.err)
		}
		// A peer that stopped reading must not hold the QP: the Terminate,
		// and whatever write is under way, get DrainTimeout, and so does
		// the wait for the peer to close.
		if s := qp.s; s != nil {
			s.c.SetWriteDeadline(time.Now().Add(qp.attr.DrainTimeout))
			s.c.SetReadDeadline(time.Now().Add(2 * qp.attr.DrainTimeout))
		}
	} else {
		qp.txStop = true
		qp.eventLocked(EventTerminateReceived, qp.err)
	}
	qp.kickTx()
}

// Modify moves the QP to state as the verbs state machine allows (V00 §6.2):
// RTS→Closing (graceful close; Bad Close → Error when work is outstanding),
// RTS→Terminate (sends a Local Catastrophic Terminate), any→Error (abortive,
// LLP reset, flush), Error→Idle (reuse). Moving to RTS is done by Dial and
// ConnRequest.Accept. Anything else is an Immediate Error.
func (qp *QP) Modify(to QPState) error {
	qp.mu.Lock()
	if qp.destroyed {
		qp.unlock()
		return ErrClosed
	}
	from := qp.state
	switch {
	case from == to && (to == StateIdle || to == StateRTS):
		qp.unlock()
		return nil
	case from == StateClosing || from == StateTerminate:
		// Any Modify in Closing or Terminate is an Immediate Error
		// (V00 §6.2.3, §6.2.5); QP.Destroy still resets the QP.
	case to == StateClosing && from == StateRTS:
		if len(qp.sq) > 0 || qp.irrqBusy > 0 {
			qp.unlock()
			qp.abort(ErrBadLLPClose, EventBadClose)
			return nil
		}
		qp.state = StateClosing
		qp.txStop = true
		qp.kickTx()
		qp.unlock()
		return nil
	case to == StateTerminate && from == StateRTS:
		qp.termWhy = termModify
		qp.terminateLocked(localTerm(0x0, 0x0, 0x00, "Modify QP to Terminate"), nil, 0)
		qp.unlock()
		return nil
	case to == StateError:
		if from == StateIdle {
			qp.state = StateError
			qp.flushLocked(StatusFlushed)
			qp.unlock()
			return nil
		}
		qp.unlock()
		if from != StateError {
			qp.abort(errors.New("endpoint: QP moved to Error"), EventErrorStateEntered)
		}
		return nil
	case to == StateIdle && from == StateError:
		if qp.done != nil && !isClosed(qp.done) {
			break // still flushing (V00 §6.2.4, Fig. 10): Immediate Error
		}
		qp.state = StateIdle
		qp.term, qp.err, qp.termOut = nil, nil, nil
		qp.unlock()
		return nil
	}
	qp.unlock()
	return fmt.Errorf("%w: %v → %v", ErrInvalidState, from, to)
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// llpLost names an LLP failure: an incoming reset, or a lost connection
// (V00 §8.3.1, Fig. 24).
func llpLost(cause error) AsyncEventType {
	if errors.Is(cause, syscall.ECONNRESET) {
		return EventLLPConnReset
	}
	return EventLLPConnLost
}

// reset closes c with an LLP reset (TCP RST) rather than a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// abort resets the LLP and moves the QP to Error.
func (qp *QP) abort(err error, ev AsyncEventType) {
	qp.mu.Lock()
	if qp.state == StateError || qp.state == StateIdle {
		qp.unlock()
		return
	}
	qp.state = StateError
	if qp.err == nil {
		qp.err = err
	}
	qp.eventLocked(ev, err)
	s := qp.s
	qp.unlock()
	if s != nil {
		reset(s.c)
	}
}

// closeWrite sends FIN and bounds how long we wait for the peer's.
func (qp *QP) closeWrite(s *stream) {
	if s.tap != nil {
		s.tap.fin(true)
	}
	type cw interface{ CloseWrite() error }
	if c, ok := s.c.(cw); ok {
		c.CloseWrite()
	}
	s.c.SetReadDeadline(time.Now().Add(qp.attr.DrainTimeout))
}

// finish ends the connection when the receive engine stops: the QP goes to
// Error (Terminate, LLP failure) or back to Idle (normal close), and every
// WR is completed or flushed.
func (qp *QP) finish(cause error) {
	qp.mu.Lock()
	head := StatusFlushed
	if qp.term != nil && !qp.term.Local {
		head = StatusRemoteTermination
	}
	switch qp.state {
	case StateRTS:
		qp.state = StateError
		if qp.err == nil {
			qp.err = cause
		}
		qp.eventLocked(llpLost(cause), qp.err)
	case StateTerminate:
		// V00 §6.2.3: after a Modify or a completion error, an event only
		// when an LLP error (or the final timeout) ended the close: Bad
		// Close. After an async error or a received Terminate the QP
		// reports entering Error.
		qp.state = StateError
		switch {
		case qp.llpErr || cause != nil:
			qp.eventLocked(EventBadClose, qp.err)
		case qp.termWhy == termAsync || !qp.term.Local:
			qp.eventLocked(EventErrorStateEntered, qp.err)
		}
	case StateClosing:
		if cause == nil {
			qp.state = StateIdle
			qp.eventLocked(EventLLPCloseComplete, nil)
		} else {
			// An LLP failure or the final timeout during the close (V00
			// §6.2.5): LLP Connection Lost.
			qp.state = StateError
			if qp.err == nil {
				qp.err = cause
			}
			qp.eventLocked(llpLost(cause), qp.err)
			reset(qp.s.c)
		}
	}
	s := qp.s
	close(qp.stop)
	qp.unlock()
	// Let the send engine finish its write (a WR whose octets went out
	// completes successfully) and put out a pending Terminate, but not
	// forever.
	s.c.SetWriteDeadline(time.Now().Add(qp.attr.DrainTimeout))
	<-qp.txDone
	if s.tap != nil {
		s.tap.fin(true)
	}
	s.c.Close()
	qp.mu.Lock()
	qp.flushLocked(head)
	close(qp.done)
	qp.unlock()
}

// attach binds an MPA stream and moves the QP from Idle to RTS (V00 §6.2:
// reset MSNs and marker positions, start processing posted WRs).
// The Initiator, and an early Responder (Config.EarlyResponder), may send
// at once.
func (qp *QP) attach(s *stream, c *Conn, sendFirst bool, rtrOut rtrType, rtrIn uint8) error {
	qp.mu.Lock()
	if qp.destroyed {
		qp.unlock()
		return ErrClosed
	}
	if qp.state != StateIdle {
		qp.unlock()
		return fmt.Errorf("%w: QP is %v, not Idle", ErrInvalidState, qp.state)
	}
	qp.state = StateRTS
	qp.s, qp.conn = s, c
	qp.kick = make(chan struct{}, 1)
	qp.stop = make(chan struct{})
	qp.done = make(chan struct{})
	qp.txDone = make(chan struct{})
	qp.gateOpen = sendFirst // else the Responder sends nothing before the first FPDU (RFC 5044 §7.1.2 rule 4)
	qp.rtrOut, qp.rtrIn = rtrOut, rtrIn
	qp.txStop, qp.remoteFin = false, false
	qp.termWhy, qp.llpErr = termAsync, false
	qp.term, qp.err, qp.termOut = nil, nil, nil
	qp.sendMSN = [4]uint32{1, 1, 1, 1}
	qp.recvMSN = [4]uint32{1, 1, 1, 1}
	qp.cur = nil
	qp.orq, qp.irrq, qp.irrqBusy = nil, nil, 0
	qp.txs = txState{}
	if rtrOut == rtrRead {
		qp.orq = append(qp.orq, &orqEntry{})
	}
	qp.unlock()
	go qp.txLoop(s)
	go qp.rxLoop(s)
	return nil
}
