package endpoint

import (
	"errors"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// evSide is a side whose device records its asynchronous events.
type evSide struct {
	*side
	ev chan AsyncEvent
}

func newEvSide(t *testing.T, attr QPAttr) *evSide {
	t.Helper()
	ev := make(chan AsyncEvent, 256)
	dev := OpenDevice(DeviceAttr{AsyncEvent: func(e AsyncEvent) {
		select {
		case ev <- e:
		default:
		}
	}})
	return &evSide{side: newSideOn(t, dev, attr), ev: ev}
}

// waitEvent waits for an event of type want on the QP (or an unaffiliated
// one when qp is nil), failing the test after a watchdog bound.
func waitEvent(t *testing.T, ev <-chan AsyncEvent, want AsyncEventType) AsyncEvent {
	t.Helper()
	tm := time.NewTimer(20 * time.Second)
	defer tm.Stop()
	var seen []AsyncEventType
	for {
		select {
		case e := <-ev:
			if e.Type == want {
				return e
			}
			seen = append(seen, e.Type)
		case <-tm.C:
			t.Fatalf("no %v event (saw %v)", want, seen)
		}
	}
}

// noEvent checks that no event of type bad was delivered so far.
func noEvent(t *testing.T, ev <-chan AsyncEvent, bad AsyncEventType) {
	t.Helper()
	for {
		select {
		case e := <-ev:
			if e.Type == bad {
				t.Fatalf("unexpected %v event (%v)", bad, e.Err)
			}
		default:
			return
		}
	}
}

// qpIn returns a QP in state st, held there: its peer is a raw MPA
// Initiator that sent its first FPDU and then neither reads nor closes,
// and the drain bound is long, so Closing and Terminate last until the
// test ends.
// openGate connects a raw peer to s and sends a zero-length Write, which
// opens the Responder's gate, and waits until s has taken it: a Write that
// arrives once a test has begun closing is a Bad Close (V00 §6.2.5), which
// would pre-empt the case under test.
func openGate(t *testing.T, s *evSide) *raw {
	t.Helper()
	r := rawClientOn(t, Config{}, v2Req(false, false), s.side)
	r.send(tagged(decode.OpWrite, 0, 0, true, nil))
	waitRxWrites(t, s.qp, 1)
	return r
}

func qpIn(t *testing.T, st QPState) (*evSide, *raw) {
	t.Helper()
	s := newEvSide(t, QPAttr{DrainTimeout: time.Minute})
	if st == StateIdle {
		return s, nil
	}
	r := openGate(t, s)
	switch st {
	case StateClosing, StateTerminate:
		if err := s.qp.Modify(st); err != nil {
			t.Fatal(err)
		}
	case StateError:
		if err := s.qp.Modify(StateError); err != nil {
			t.Fatal(err)
		}
		waitDone(t, s.qp, StateError)
	}
	if got := s.qp.State(); got != st {
		t.Fatalf("QP in %v, want %v", got, st)
	}
	return s, r
}

// TestQPStateVerbs is the state × verb table of V00 §6.2 (Figs. 7-11):
// PostSend, PostRecv and every Modify in each of Idle, RTS, Closing,
// Terminate and Error, with the immediate result, the state after, the
// completion the WR gets and the async event where the draft names one.
func TestQPStateVerbs(t *testing.T) {
	const none = Status(255) // no completion expected (yet)
	type want struct {
		err   error // nil or ErrInvalidState
		state QPState
		wc    Status         // the WR's completion status; none
		event AsyncEventType // 0: not checked
	}
	post := func(s *evSide) error {
		_, err := s.qp.PostSend(SendWR{WRID: 1, Opcode: OpSend, Signaled: true})
		return err
	}
	recv := func(s *evSide) error {
		mr, _ := s.reg(t, 16, AccessAll)
		_, err := s.qp.PostRecv(RecvWR{WRID: 1, SGL: []SGE{mr.SGE(0, 16)}})
		return err
	}
	modify := func(to QPState) func(s *evSide) error { return func(s *evSide) error { return s.qp.Modify(to) } }
	type verb struct {
		name string
		do   func(s *evSide) error
	}
	verbs := []verb{{"PostSend", post}, {"PostRecv", recv},
		{"Modify→Idle", modify(StateIdle)}, {"Modify→RTS", modify(StateRTS)}, {"Modify→Closing", modify(StateClosing)},
		{"Modify→Terminate", modify(StateTerminate)}, {"Modify→Error", modify(StateError)}}
	bad := ErrInvalidState
	table := map[QPState][]want{
		// Idle: WRs are enqueued and not processed; only →Error (flush)
		// and staying Idle are allowed; RTS is reached by Dial/Accept.
		StateIdle: {{nil, StateIdle, none, 0}, {nil, StateIdle, none, 0},
			{nil, StateIdle, none, 0}, {bad, StateIdle, none, 0}, {bad, StateIdle, none, 0},
			{bad, StateIdle, none, 0}, {nil, StateError, none, 0}},
		// RTS: WRs run; →Closing (graceful), →Terminate (Terminate sent),
		// →Error (reset); →Idle is an Immediate Error.
		StateRTS: {{nil, StateRTS, StatusSuccess, 0}, {nil, StateRTS, none, 0},
			{bad, StateRTS, none, 0}, {nil, StateRTS, none, 0}, {nil, StateClosing, none, 0},
			{nil, StateTerminate, none, 0}, {nil, StateError, none, 0}},
		// Closing: PostSQ ⇒ enqueue, flush, LLP reset, Bad Close → Error;
		// PostRQ ⇒ enqueue and flush; any Modify is an Immediate Error.
		StateClosing: {{nil, StateError, StatusFlushed, EventBadClose}, {nil, StateClosing, StatusFlushed, 0},
			{bad, StateClosing, none, 0}, {bad, StateClosing, none, 0}, {bad, StateClosing, none, 0},
			{bad, StateClosing, none, 0}, {bad, StateClosing, none, 0}},
		// Terminate: WRs are not processed and are flushed; any Modify
		// is an Immediate Error.
		StateTerminate: {{nil, StateTerminate, StatusFlushed, 0}, {nil, StateTerminate, StatusFlushed, 0},
			{bad, StateTerminate, none, 0}, {bad, StateTerminate, none, 0}, {bad, StateTerminate, none, 0},
			{bad, StateTerminate, none, 0}, {bad, StateTerminate, none, 0}},
		// Error: WRs are flushed; →Idle once flushed (reuse), →Error
		// stays; the rest are Immediate Errors.
		StateError: {{nil, StateError, StatusFlushed, 0}, {nil, StateError, StatusFlushed, 0},
			{nil, StateIdle, none, 0}, {bad, StateError, none, 0}, {bad, StateError, none, 0},
			{bad, StateError, none, 0}, {nil, StateError, none, 0}},
	}
	for _, st := range []QPState{StateIdle, StateRTS, StateClosing, StateTerminate, StateError} {
		for i, v := range verbs {
			w := table[st][i]
			t.Run(st.String()+"/"+v.name, func(t *testing.T) {
				s, _ := qpIn(t, st)
				err := v.do(s)
				if !errors.Is(err, w.err) || (w.err == nil) != (err == nil) {
					t.Fatalf("%v in %v: %v, want %v", v.name, st, err, w.err)
				}
				if got := s.qp.State(); got != w.state {
					t.Fatalf("%v in %v: QP %v after, want %v", v.name, st, got, w.state)
				}
				if w.wc != none {
					wc := s.wait(t)
					if wc.WRID != 1 || wc.Status != w.wc {
						t.Fatalf("%v in %v: completion %v %v, want %v", v.name, st, wc.Opcode, wc.Status, w.wc)
					}
				} else if n := s.cq.Len(); n != 0 {
					t.Fatalf("%v in %v: %d completions, want none", v.name, st, n)
				}
				if w.event != 0 {
					waitEvent(t, s.ev, w.event)
				}
			})
		}
	}
}
