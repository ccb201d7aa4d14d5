// Package conform is a conformance and fault-injection suite for iWARP
// peers (RFC 5040, RFC 5041, RFC 5044, RFC 6581), run by cmd/iwconform.
//
// It is shaped like the InfiniBand compliance suite: one case per spec
// assertion, each scripted with what is sent and the reaction the RFC
// requires (a Terminate with a given Layer/EType/Code, or the connection
// closed without one). Every case uses a fresh connection to the target.
//
// Cases that need a valid STag of the target learn one through rping's
// exchange, which every RDMA stack can run: the suite dials as an rping
// client and Sends the advertisement of its source buffer; the rping server
// RDMA Reads it, and the Read Request's Data Sink is the server's rdma_buf,
// registered with Remote Write and Remote Read. Any rping server is a
// target (Linux `rping -s -P`, `iwconform --serve`).
package conform

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/endpoint/rping"
)

// Verdicts. Error is a case that could not be run as scripted (no
// connection, a post refused): a setup failure, not the target's
// conformance. NotRun is a case after the target died (Reason says after
// which case and how it was found dead).
const (
	Pass   = "pass"
	Fail   = "fail"
	Skip   = "skip"
	Error  = "error"
	NotRun = "not-run"
)

// Options configure a run.
type Options struct {
	// Addr is the target's HOST:PORT when the suite dials (the default),
	// or the address to listen on when Listen is set.
	Addr string
	// Listen makes the suite the Responder: the target dials it, once per
	// case (e.g. an rping client run in a loop).
	Listen bool
	// Config is the MPA configuration (CRC, markers, peer-to-peer, RTR).
	Config endpoint.Config
	// Size is the rping buffer size advertised (64, rping's default; at
	// most the target's -S).
	Size int
	// Timeout bounds each case's wait for the target's reaction (5 s).
	Timeout time.Duration
	// Only runs the cases whose ID has one of these prefixes.
	Only []string
	// StartDelay is how long each case waits after the MPA exchange
	// before its first FPDU when the suite dials (0: none; a peer-to-peer
	// Initiator's RTR goes out at once). RFC 5044 §7.1.3 lets the
	// Initiator send at once; Linux siw can leave an FPDU that arrives
	// right after its MPA Reply unread (the Reply goes out before the
	// QP's socket callbacks are installed), and the case then sees
	// silence that is not the fault's doing. rping waits for ESTABLISHED.
	StartDelay time.Duration
	// RFC7306 says the target supports RFC 7306 atomics and Immediate
	// Data: nothing on the wire says so, the user agrees it as a ULP would
	// (RFC 7306 §1.1). The atomic cases then check the target's answers
	// instead of its refusal (atomic.go).
	RFC7306 bool
	// Repeat runs the selected cases this many times (0: once), for a
	// target whose failures are intermittent; each row says its Run.
	Repeat int
	// PcapDir, when set, gets each case's own traffic as ID.pcap
	// (ID-RUN.pcap with Repeat), when the suite dials.
	PcapDir string

	beforeDial func(*endpoint.QP) // a case's hook on its QP before the MPA exchange
}

// Row is one case's result.
type Row struct {
	ID       string `json:"id"`
	Clause   string `json:"clause"`
	Sent     string `json:"sent"`
	Expected string `json:"expected"`
	Got      string `json:"got"`
	Verdict  string `json:"verdict"`
	Reason   string `json:"reason,omitempty"`
	// Run is the pass of Options.Repeat (from 1; 0 without Repeat).
	Run int `json:"run,omitempty"`
	// Seconds is how long the case took, its connection included.
	Seconds float64 `json:"seconds"`
	// Evidence: the case's own capture (Options.PcapDir) and the
	// Terminate the target sent, its octets in hex as received (the
	// control word, DDP Segment Length and the copied headers).
	Pcap      string `json:"pcap,omitempty"`
	Terminate string `json:"terminate,omitempty"`
}

// reaction is what the target did.
type reaction struct {
	kind  string // "terminate", "close", "reset", "silence", "our-terminate", "placed", "misplaced"
	cause decode.TermCause
	siw   *decode.TermCause // the cause under Linux siw's swapped encoding, when it differs
	note  string
}

func (r reaction) String() string {
	switch r.kind {
	case "terminate":
		t := fmt.Sprintf("Terminate 0x%x/0x%x/0x%02x %s", r.cause.Layer, r.cause.EType, r.cause.Code, r.cause.Short())
		if r.siw != nil {
			t += fmt.Sprintf(" [siw encoding: 0x%x/0x%x/0x%02x %s]", r.siw.Layer, r.siw.EType, r.siw.Code, r.siw.Short())
		}
		return t
	case "":
		return "nothing"
	}
	if r.note != "" {
		return r.kind + " (" + r.note + ")"
	}
	return r.kind
}

// expect is the required reaction: a Terminate with one of causes, or the
// connection closed (FIN or reset) without a Terminate, or (ok) the case's
// operations completed as the RFC requires, checked by the case itself.
type expect struct {
	causes  []decode.TermCause
	closed  bool
	ok      bool
	placed  bool // the case's data was placed and read back intact (mulpdu.go)
	anyTerm bool // a Terminate of any cause (the fault breaks framing: what the target reads is not defined)
}

func term(layer, etype, code uint8) expect {
	return expect{causes: []decode.TermCause{decode.LookupTermCause(layer, etype, code)}}
}

func (e expect) or(layer, etype, code uint8) expect {
	e.causes = append(e.causes, decode.LookupTermCause(layer, etype, code))
	return e
}

func (e expect) String() string {
	var s []string
	for _, c := range e.causes {
		s = append(s, fmt.Sprintf("Terminate 0x%x/0x%x/0x%02x %s", c.Layer, c.EType, c.Code, c.Short()))
	}
	if e.anyTerm {
		s = append(s, "a Terminate")
	}
	if e.closed {
		s = append(s, "close or reset, no Terminate")
	}
	if e.ok {
		s = append(s, "completions with the right values")
	}
	if e.placed {
		s = append(s, "placed intact")
	}
	return strings.Join(s, " | ")
}

func (e expect) match(r reaction) bool {
	switch r.kind {
	case "terminate":
		return e.anyTerm || e.matchCause(r.cause)
	case "close", "reset":
		return e.closed
	case "ok":
		return e.ok
	case "placed":
		return e.placed
	}
	return false
}

func (e expect) matchCause(c decode.TermCause) bool {
	for _, w := range e.causes {
		if w.Layer == c.Layer && w.EType == c.EType && w.Code == c.Code {
			return true
		}
	}
	return false
}

// Case is one assertion.
type Case struct {
	ID     string
	Clause string
	Sent   string
	expect expect
	// needSTag: run rping's first exchange to learn the target's rdma_buf.
	needSTag bool
	// run commits the fault; it returns a reason to skip, if any.
	run func(c *conn) (skip string, err error)
	// mpa, when set, runs a case that drives the MPA exchange itself
	// (stacks.go) instead of open and run.
	mpa func(ctx context.Context, o *Options, ln *endpoint.Listener) (got, verdict, reason string)
	// config, when set, changes the case's MPA configuration.
	config func(*endpoint.Config)
}

// conn is one case's connection and what it learned.
type conn struct {
	o    *Options
	dev  *endpoint.Device
	pd   *endpoint.PD
	cq   *endpoint.CQ
	qp   *endpoint.QP
	ec   *endpoint.Conn
	send *endpoint.MR // 16-octet Send buffer (an rping advertisement)
	src  *endpoint.MR // rping source buffer (Remote Read)
	data *endpoint.MR // local source of faulty Writes / sink of Reads
	recv *endpoint.MR

	mu       sync.Mutex
	sink     decode.ReadRequest // the target's Read Request (its Data Sink)
	learned  bool
	gotRead  chan struct{}
	selfTerm bool      // the case sent a Terminate itself
	done     *reaction // the target's reaction as the case itself saw it, when it did
	others   []*conn   // more connections of the case, closed with it
}

// STag is the target's learned rdma_buf STag, TO and length.
func (c *conn) stag() (endpoint.STag, uint64, uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return endpoint.STag(c.sink.SinkSTag), c.sink.SinkTO, c.sink.Size
}

func (c *conn) post(wrs ...endpoint.SendWR) error {
	_, err := c.qp.PostSend(wrs...)
	return err
}

func (c *conn) inject(f endpoint.Fault) error { return c.qp.InjectFault(f) }

// advert is a Send of the rping advertisement of our source buffer.
func (c *conn) advert(wrid uint64) endpoint.SendWR {
	rping.Info{Addr: c.src.Addr(), RKey: uint32(c.src.STag()), Size: uint32(c.o.Size)}.Append(c.send.Buf()[:0])
	return endpoint.SendWR{WRID: wrid, Opcode: endpoint.OpSend, SGL: []endpoint.SGE{c.send.SGE(0, rping.InfoLen)}}
}

func (c *conn) write(stag endpoint.STag, to uint64, n int) endpoint.SendWR {
	return endpoint.SendWR{WRID: 50, Opcode: endpoint.OpWrite, SGL: []endpoint.SGE{c.data.SGE(0, n)}, RemoteAddr: to, RKey: stag}
}

func (c *conn) read(stag endpoint.STag, to uint64, n int) endpoint.SendWR {
	return endpoint.SendWR{WRID: 60, Opcode: endpoint.OpRead, SGL: []endpoint.SGE{c.data.SGE(0, n)}, RemoteAddr: to, RKey: stag}
}

// Cases is the suite, in the order it runs.
func Cases() []Case {
	sendFault := func(k endpoint.FaultKind, v uint32) func(c *conn) (string, error) {
		return func(c *conn) (string, error) {
			if err := c.inject(endpoint.Fault{Kind: k, On: endpoint.OnSend, Value: v}); err != nil {
				return "", err
			}
			return "", c.post(c.advert(1))
		}
	}
	needCRC := func(f func(c *conn) (string, error)) func(c *conn) (string, error) {
		return func(c *conn) (string, error) {
			if !c.ec.Params().CRC {
				return "MPA CRC not negotiated (use --crc)", nil
			}
			return f(c)
		}
	}
	return append([]Case{
		{ID: "mpa-crc", Clause: "RFC 5044 §4.4, §8 (MPA-16)", Sent: "Send whose FPDU CRC is inverted",
			expect: term(2, 0, 0x02), run: needCRC(sendFault(endpoint.FaultBadCRC, 0))},
		{ID: "mpa-crc-byte-order", Clause: "RFC 5044 §4.4", Sent: "Send whose CRC is in big-endian order",
			expect: term(2, 0, 0x02), run: needCRC(sendFault(endpoint.FaultCRCByteOrder, 0))},
		{ID: "mpa-truncated", Clause: "RFC 5044 §8 (LLP failure)", Sent: "first 10 octets of a Send's FPDU, then FIN",
			expect: expect{closed: true}, run: sendFault(endpoint.FaultTruncate, 10)},
		{ID: "ddp-version", Clause: "RFC 5041 §7.1, §7.2 (DDP-01)", Sent: "untagged Send with DDP version 0",
			expect: term(1, 2, 0x06), run: sendFault(endpoint.FaultDDPVersion, 0)},
		{ID: "ddp-qn", Clause: "RFC 5041 §7.1, §7.2 (DDP-03)", Sent: "Send on QN 5",
			expect: term(1, 2, 0x01), run: sendFault(endpoint.FaultQN, 5)},
		{ID: "ddp-msn", Clause: "RFC 5041 §5.3, §7.2 (DDP-05)", Sent: "Send with MSN 16 ahead",
			expect: term(1, 2, 0x03), run: sendFault(endpoint.FaultMSN, 16)},
		{ID: "ddp-mo", Clause: "RFC 5041 §7.1, §7.2 (DDP-06)", Sent: "Send with MO 4096 (beyond the 16-octet receive)",
			expect: term(1, 2, 0x04), run: sendFault(endpoint.FaultMO, 4096)},
		{ID: "ddp-no-recv", Clause: "RFC 5041 §7.1, §7.2 (DDP-04)", Sent: "four Sends at once (rping posts one receive)",
			expect: term(1, 2, 0x02), run: func(c *conn) (string, error) {
				return "", c.post(c.advert(1), c.advert(2), c.advert(3), c.advert(4))
			}},
		{ID: "rdmap-version", Clause: "RFC 5040 §7.2 (RD-01)", Sent: "Send with RDMAP version 0",
			expect: term(0, 2, 0x05), run: sendFault(endpoint.FaultRDMAPVersion, 0)},
		{ID: "rdmap-opcode", Clause: "RFC 5040 §7.2 (RD-02)", Sent: "Send relabelled with unassigned opcode 0xF",
			expect: term(0, 2, 0x06), run: sendFault(endpoint.FaultOpcode, 0xF)},
		{ID: "ddp-stag-invalid", Clause: "RFC 5041 §7.2 (DDP-08), RFC 5040 §8.1.1", Sent: "RDMA Write to the learned STag with another key",
			needSTag: true, expect: term(1, 1, 0x00), run: func(c *conn) (string, error) {
				s, to, _ := c.stag()
				return "", c.post(c.write(s^0x80, to, 16))
			}},
		{ID: "ddp-bounds", Clause: "RFC 5041 §7.1, §7.2 (DDP-10)", Sent: "RDMA Write 1 MiB past the learned buffer",
			needSTag: true, expect: term(1, 1, 0x01), run: func(c *conn) (string, error) {
				s, to, _ := c.stag()
				return "", c.post(c.write(s, to+1<<20, 16))
			}},
		{ID: "ddp-wrap", Clause: "RFC 5041 §7.1, §7.2 (DDP-11)", Sent: "RDMA Write whose TO wraps past 2^64",
			needSTag: true, expect: term(1, 1, 0x03).or(1, 1, 0x01), run: func(c *conn) (string, error) {
				s, _, _ := c.stag()
				return "", c.post(c.write(s, ^uint64(0)-7, 16))
			}},
		{ID: "rdmap-read-invalid", Clause: "RFC 5040 §7.2 (RD-08)", Sent: "RDMA Read of the learned STag with another key",
			needSTag: true, expect: term(0, 1, 0x00), run: func(c *conn) (string, error) {
				s, to, _ := c.stag()
				return "", c.post(c.read(s^0x80, to, 16))
			}},
		{ID: "rdmap-read-bounds", Clause: "RFC 5040 §7.2 (RD-10)", Sent: "RDMA Read 1 MiB past the learned buffer",
			needSTag: true, expect: term(0, 1, 0x01), run: func(c *conn) (string, error) {
				s, to, _ := c.stag()
				return "", c.post(c.read(s, to+1<<20, 16))
			}},
		{ID: "rdmap-read-wrap", Clause: "RFC 5040 §7.2 (RD-11)", Sent: "RDMA Read whose source TO wraps past 2^64",
			needSTag: true, expect: term(0, 1, 0x04).or(0, 1, 0x01), run: func(c *conn) (string, error) {
				s, _, _ := c.stag()
				return "", c.post(c.read(s, ^uint64(0)-7, 16))
			}},
		{ID: "rdmap-ird", Clause: "RFC 5040 §6.1, §7.2 (RD-14)", Sent: "IRD+2 RDMA Reads at once",
			needSTag: true, expect: term(1, 2, 0x03), run: func(c *conn) (string, error) {
				ird := c.ec.Params().PeerIRD
				if ird < 0 || ird > 64 {
					return fmt.Sprintf("target IRD %d not known or too large", ird), nil
				}
				if err := c.inject(endpoint.Fault{Kind: endpoint.FaultExceedORD}); err != nil {
					return "", err
				}
				s, to, n := c.stag()
				var wrs []endpoint.SendWR
				for i := 0; i < ird+2; i++ {
					wrs = append(wrs, c.read(s, to, int(min(n, 16))))
				}
				return "", c.post(wrs...)
			}},
		{ID: "rdmap-read-response-unsolicited", Clause: "RFC 5040 §7.2 (RD-15)", Sent: "Read Response with no RDMA Read outstanding",
			needSTag: true, expect: term(0, 2, 0x06), run: func(c *conn) (string, error) {
				if err := c.inject(endpoint.Fault{Kind: endpoint.FaultOpcode, On: endpoint.OnWrite, Value: uint32(decode.OpReadResponse)}); err != nil {
					return "", err
				}
				s, to, _ := c.stag()
				return "", c.post(c.write(s, to, 16))
			}},
		{ID: "rdmap-read-response-oversize", Clause: "RFC 5040 §4.4, RFC 5041 §7.2 (DDP-10)", Sent: "Read Response 4096 octets longer than the Read",
			expect: term(1, 1, 0x01).or(0, 2, 0x07), run: func(c *conn) (string, error) {
				if err := c.inject(endpoint.Fault{Kind: endpoint.FaultOversize, On: endpoint.OnReadResponse, Value: 4096}); err != nil {
					return "", err
				}
				return "", c.post(c.advert(1))
			}},
		{ID: "rdmap-data-after-terminate", Clause: "RFC 5040 §5.4", Sent: "Terminate (Local Catastrophic), then a Send",
			expect: expect{closed: true}, run: func(c *conn) (string, error) {
				if err := c.inject(endpoint.Fault{Kind: endpoint.FaultDataAfterTerminate, On: endpoint.OnTerminate}); err != nil {
					return "", err
				}
				c.selfTerm = true
				return "", c.qp.Modify(endpoint.StateTerminate)
			}},
		{ID: "mpa-rtr-missing", Clause: "RFC 6581 §5, §8, §9.3", Sent: "peer-to-peer: no RTR, a Send first",
			expect: term(2, 0, 0x07), run: func(c *conn) (string, error) {
				return "", c.post(c.advert(1)) // the fault was injected before connecting
			}},
	}, append(append(append(atomicCases(), stackCases()...), rfc5040Cases()...), mulpduCases()...)...)
}

// Run runs the suite, calling emit with each row as it completes.
func Run(ctx context.Context, o Options, emit func(Row)) ([]Row, error) {
	if o.Size == 0 {
		o.Size = 64
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	var ln *endpoint.Listener
	if o.Listen {
		var err error
		if ln, err = endpoint.Listen(ctx, "tcp", o.Addr, &o.Config); err != nil {
			return nil, err
		}
		defer ln.Close()
	}
	var cases []Case
	for _, tc := range Cases() {
		if selected(tc.ID, o.Only) {
			cases = append(cases, tc)
		}
	}
	var rows []Row
	dead := "" // why the target is taken for dead
	for run := 1; run <= max(o.Repeat, 1); run++ {
		for _, tc := range cases {
			var r Row
			if dead != "" {
				r = Row{ID: tc.ID, Clause: tc.Clause, Sent: tc.Sent, Expected: tc.expect.String(), Got: "n/a", Verdict: NotRun, Reason: dead}
			} else {
				r = runCase(ctx, &o, ln, tc, run)
				dead = o.checkAlive(ctx, &r)
			}
			if o.Repeat > 0 {
				r.Run = run
			}
			rows = append(rows, r)
			if emit != nil {
				emit(r)
			}
			if ctx.Err() != nil {
				return rows, ctx.Err()
			}
		}
	}
	return rows, nil
}

// checkAlive, after a case when the suite dials, makes a connection of
// its own (an MPA exchange, then a close): a target that no longer
// answers died during the case, which then is no pass whatever it saw
// before (Linux siw's kernel BUG at iwcm.c:969 can come after the
// reaction the case wanted). It returns why the target is taken for
// dead, or "". With Listen, where only the target can connect, a case
// whose connection did not come stops the run.
func (o *Options) checkAlive(ctx context.Context, r *Row) string {
	if o.Listen {
		if r.Verdict == Error && r.Got == "no connection" {
			return "the target stopped connecting: " + r.Reason
		}
		return ""
	}
	err := o.probe(ctx)
	if err == nil || ctx.Err() != nil {
		return ""
	}
	if r.Verdict != Error {
		r.Verdict = Fail
		r.Got += "; then the target stopped answering"
		r.Reason = strings.TrimPrefix(r.Reason+"; ", "; ") + "the target died during this case: " + err.Error()
		return fmt.Sprintf("the target died during %s: %v", r.ID, err)
	}
	return fmt.Sprintf("the target stopped answering at %s: %v", r.ID, err)
}

// probe connects to the target and closes, a few times within twice the
// case timeout (a target may take a moment to listen again after a case).
func (o *Options) probe(ctx context.Context) error {
	end := time.Now().Add(2 * o.Timeout)
	for {
		err := o.probeOnce(ctx)
		if err == nil || time.Now().After(end) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(500 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

func (o *Options) probeOnce(ctx context.Context) error {
	dev := endpoint.OpenDevice(endpoint.DeviceAttr{})
	cq, err := dev.CreateCQ(8)
	if err != nil {
		return err
	}
	qp, err := dev.AllocPD().CreateQP(endpoint.QPAttr{SendCQ: cq, RecvCQ: cq, SQDepth: 4, RQDepth: 4, IRD: 1, ORD: 1})
	if err != nil {
		return err
	}
	defer qp.Destroy()
	cfg := o.Config
	cfg.Capture = nil
	cfg.Timeout = o.Timeout
	// A target that refuses MPA v2 with a reset (cxgb4's peers, RefuseV2)
	// is alive: retry with v1 as cxgb4 does (RFC 6581 §10).
	cfg.FallbackV1 = true
	// Never peer-to-peer: a probe that closes while the target waits for
	// its RTR is what crashes a Linux siw host (kernel BUG at iwcm.c:969,
	// peers/siw/iwcm-969.md); the probe must not be the case that kills
	// the target. A target that insists on RTRs answers with a Reject,
	// which counts as alive.
	cfg.PeerToPeer, cfg.RTR = false, 0
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	c, err := endpoint.Dial(cctx, "tcp", o.Addr, qp, &cfg)
	var me *endpoint.MPAError
	if errors.As(err, &me) {
		return nil // an MPA Reject (or a refused revision) is an answer: the target lives
	}
	if err != nil {
		return err
	}
	return c.Close()
}

func selected(id string, only []string) bool {
	if len(only) == 0 {
		return true
	}
	for _, p := range only {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

func runCase(ctx context.Context, o *Options, ln *endpoint.Listener, tc Case, run int) (row Row) {
	row = Row{ID: tc.ID, Clause: tc.Clause, Sent: tc.Sent, Expected: tc.expect.String()}
	start := time.Now()
	defer func() { row.Seconds = time.Since(start).Seconds() }()
	if tc.mpa != nil {
		row.Got, row.Verdict, row.Reason = tc.mpa(ctx, o, ln)
		return row
	}
	cfg := o.Config
	if tc.config != nil {
		tc.config(&cfg)
	}
	if o.PcapDir != "" && ln == nil {
		name := tc.ID
		if o.Repeat > 0 {
			name = fmt.Sprintf("%s-%d", tc.ID, run)
		}
		path := filepath.Join(o.PcapDir, name+".pcap")
		capt, closeCap, err := newCaseCapture(path)
		if err != nil {
			row.Verdict, row.Reason, row.Got = Error, "capture: "+err.Error(), "n/a"
			return row
		}
		defer closeCap()
		cfg.Capture, row.Pcap = capt, path
	}
	if tc.ID == "mpa-rtr-missing" && !cfg.PeerToPeer {
		row.Verdict, row.Reason = Skip, "peer-to-peer not selected (use --p2p)"
		return row
	}
	c, err := open(ctx, o, ln, cfg, tc.ID == "mpa-rtr-missing")
	if err != nil {
		row.Verdict, row.Reason, row.Got = Error, "connecting: "+err.Error(), "no connection"
		return row
	}
	defer c.close()
	defer func() {
		if ti := c.qp.Terminate(); ti != nil && !ti.Local {
			row.Terminate = hex.EncodeToString(termOctets(&ti.Header))
		}
	}()
	if tc.needSTag {
		if err := c.learn(ctx); err != nil {
			row.Verdict, row.Reason, row.Got = Skip, "no STag learned: "+err.Error(), "n/a"
			return row
		}
	}
	skip, err := tc.run(c)
	if skip != "" {
		row.Verdict, row.Reason, row.Got = Skip, skip, "n/a"
		return row
	}
	if err != nil {
		row.Verdict, row.Reason, row.Got = Error, "posting: "+err.Error(), "n/a"
		return row
	}
	re := reaction{kind: "ok"}
	switch {
	case c.done != nil:
		re = *c.done
	case !tc.expect.ok:
		re = c.reaction(ctx, o.Timeout)
	}
	row.Got = re.String()
	if tc.expect.match(re) {
		row.Verdict = Pass
	} else {
		row.Verdict = Fail
		if re.siw != nil && tc.expect.matchCause(*re.siw) {
			// A named deviation: the right cause, in the control word
			// layout Linux siw uses (iwarp-reference §5.1).
			row.Reason = "right cause in Linux siw's swapped Terminate encoding, not RFC 5040 §4.8's"
		}
	}
	return row
}

// termOctets is a received Terminate's header as on the wire (RFC 5040
// §4.8): the control word, the DDP Segment Length and the copied DDP and
// RDMAP headers, whichever it carried.
func termOctets(t *decode.Terminate) []byte {
	b := append([]byte(nil), t.Raw[:]...)
	if t.HasSegLen {
		b = binary.BigEndian.AppendUint16(b, t.DDPSegmentLength)
	}
	b = append(b, t.TermDDPRaw...)
	return append(b, t.TermRDMARaw...)
}

// newCaseCapture starts a pcap file at path; the func flushes and closes it.
func newCaseCapture(path string) (*endpoint.Capture, func(), error) {
	c, done, err := endpoint.CreateCapture(path)
	if err != nil {
		return nil, nil, err
	}
	return c, func() { done() }, nil
}

// open makes the case's connection.
func open(ctx context.Context, o *Options, ln *endpoint.Listener, cfg endpoint.Config, omitRTR bool) (*conn, error) {
	c := &conn{o: o, dev: endpoint.OpenDevice(endpoint.DeviceAttr{}), gotRead: make(chan struct{}, 1)}
	c.pd = c.dev.AllocPD()
	var err error
	if c.cq, err = c.dev.CreateCQ(256); err != nil {
		return nil, err
	}
	// RFC 7306 on our side changes nothing until a case posts an atomic.
	c.qp, err = c.pd.CreateQP(endpoint.QPAttr{SendCQ: c.cq, RecvCQ: c.cq, SQDepth: 64, RQDepth: 8, IRD: 1, ORD: 1, RFC7306: true,
		DrainTimeout: 500 * time.Millisecond, OnReadRequest: func(rr decode.ReadRequest) {
			c.mu.Lock()
			if !c.learned && rr.Size > 0 {
				c.sink, c.learned = rr, true
				select {
				case c.gotRead <- struct{}{}:
				default:
				}
			}
			c.mu.Unlock()
		}})
	if err != nil {
		return nil, err
	}
	reg := func(n int, a endpoint.Access) *endpoint.MR {
		if err != nil {
			return nil
		}
		var mr *endpoint.MR
		mr, err = c.pd.RegisterMR(make([]byte, n), a, nil)
		return mr
	}
	c.send = reg(rping.InfoLen, endpoint.AccessLocalRead)
	c.recv = reg(4*rping.InfoLen, endpoint.AccessLocalWrite)
	c.src = reg(max(o.Size, rping.MinSize), endpoint.AccessLocalRead|endpoint.AccessLocalWrite|endpoint.AccessRemoteRead)
	c.data = reg(64<<10, endpoint.AccessAll)
	if err != nil {
		return nil, err
	}
	rping.Pattern(c.src.Buf(), 0)
	for i := 0; i < 4; i++ {
		c.qp.PostRecv(endpoint.RecvWR{WRID: uint64(100 + i), SGL: []endpoint.SGE{c.recv.SGE(i*rping.InfoLen, rping.InfoLen)}})
	}
	if omitRTR {
		c.qp.InjectFault(endpoint.Fault{Kind: endpoint.FaultOmitRTR, On: endpoint.OnRTR})
	}
	if o.beforeDial != nil {
		o.beforeDial(c.qp)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if ln != nil {
		req, err := ln.Accept(cctx)
		if err != nil {
			return nil, err
		}
		c.ec, err = req.Accept(c.qp, nil)
		if err != nil {
			return nil, err
		}
		// An rping client advertises its source buffer first: that is the
		// STag to learn.
		return c, nil
	}
	if c.ec, err = endpoint.Dial(cctx, "tcp", o.Addr, c.qp, &cfg); err != nil {
		return nil, err
	}
	if o.StartDelay > 0 {
		select {
		case <-time.After(o.StartDelay):
		case <-ctx.Done():
		}
	}
	return c, nil
}

// learn runs rping's first exchange: our advertisement, the target's RDMA
// Read of our source (whose Data Sink we keep), its go-ahead.
func (c *conn) learn(ctx context.Context) error {
	if c.o.Listen {
		// The rping client Sends its source advertisement first.
		wc, err := c.waitRecv(ctx)
		if err != nil {
			return err
		}
		info, err := rping.ParseInfo(c.recv.Buf()[(wc.WRID-100)*rping.InfoLen:][:rping.InfoLen])
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.sink = decode.ReadRequest{SinkSTag: info.RKey, SinkTO: info.Addr, Size: info.Size}
		c.learned = true
		c.mu.Unlock()
		return nil
	}
	if err := c.post(c.advert(1)); err != nil {
		return err
	}
	select {
	case <-c.gotRead:
	case <-c.qp.Done():
		return fmt.Errorf("connection ended: %v", c.qp.Err())
	case <-time.After(c.o.Timeout):
		return errors.New("the target did not RDMA Read our advertised buffer")
	}
	_, err := c.waitRecv(ctx) // go-ahead
	return err
}

func (c *conn) waitRecv(ctx context.Context) (endpoint.WorkCompletion, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	var wc [1]endpoint.WorkCompletion
	for {
		if _, err := c.cq.Wait(ctx, wc[:]); err != nil {
			return wc[0], fmt.Errorf("waiting for a receive: %w (QP %v: %v)", err, c.qp.State(), c.qp.Err())
		}
		if wc[0].Status != endpoint.StatusSuccess {
			return wc[0], fmt.Errorf("%v completed with %v (%v)", wc[0].Opcode, wc[0].Status, c.qp.Err())
		}
		if wc[0].Opcode == endpoint.OpRecv {
			return wc[0], nil
		}
	}
}

// reaction waits for the connection to end (or the timeout) and says how.
func (c *conn) reaction(ctx context.Context, d time.Duration) reaction {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.qp.Done():
	case <-t.C:
		if ti := c.qp.Terminate(); ti != nil && !ti.Local {
			return reaction{kind: "terminate", cause: ti.Cause, siw: ti.SiwCause}
		}
		return reaction{kind: "silence", note: fmt.Sprintf("QP still %v after %v", c.qp.State(), d)}
	case <-ctx.Done():
		return reaction{kind: "silence", note: ctx.Err().Error()}
	}
	if ti := c.qp.Terminate(); ti != nil && !ti.Local {
		return reaction{kind: "terminate", cause: ti.Cause, siw: ti.SiwCause}
	}
	err := c.qp.Err()
	if ti := c.qp.Terminate(); ti != nil && ti.Local && ti.Cause.Layer == 0 && ti.Cause.EType == 2 && ti.Cause.Code == 0x07 && strings.Contains(ti.Reason, "Bad LLP Close") {
		return reaction{kind: "close", note: "no Terminate; FIN while our request was outstanding"}
	}
	if ti := c.qp.Terminate(); ti != nil && ti.Local && !c.selfTerm {
		// We sent a Terminate because of what the target sent.
		return reaction{kind: "our-terminate", note: err.Error()}
	}
	if c.selfTerm {
		err = c.qp.Err()
		if errors.As(err, new(*endpoint.TerminateError)) {
			return reaction{kind: "close", note: "after our Terminate"}
		}
	}
	switch {
	case err == nil:
		return reaction{kind: "close", note: "normal close"}
	case errors.Is(err, syscall.ECONNRESET):
		return reaction{kind: "reset"}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return reaction{kind: "close", note: "no FIN within the drain time"}
	}
	return reaction{kind: "close", note: err.Error()}
}

// close ends the case's connection at once: Destroy aborts the stream and
// flushes the queues, whatever state the case left the QP in (a Modify to
// Error is an Immediate Error in Closing and Terminate, verbs V00 §6.3).
func (c *conn) close() {
	c.qp.Destroy()
	for _, o := range c.others {
		o.close()
	}
}

// MaxServeConns bounds the connections Serve serves at once; a request
// beyond it is rejected (MPA Reply with R set).
const MaxServeConns = 64

// Serve runs an rping-compatible target on ln until ctx ends: every
// connection is served concurrently by its own QP (rping -s -P that takes
// any number of clients, up to MaxServeConns at a time). Each
// connection's outcome goes to logf, if set.
func Serve(ctx context.Context, ln *endpoint.Listener, o rping.Options, logf func(format string, args ...any)) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, MaxServeConns)
	for {
		req, err := ln.Accept(ctx)
		if err != nil {
			// One connection's failure (closed, silent past the MPA
			// deadline, a bad Request) is logged; only the listener's
			// own error ends Serve.
			var ce *endpoint.ConnError
			if errors.As(err, &ce) {
				if logf != nil {
					logf("%v", err)
				}
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case sem <- struct{}{}:
		default:
			req.Reject(nil)
			if logf != nil {
				logf("%v: rejected, %d connections served", req.RemoteAddr(), MaxServeConns)
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			so := o
			so.Count = 0
			res, err := rping.ServeRequest(ctx, req, so)
			if logf != nil {
				logf("%v: %d pings: %v", req.RemoteAddr(), res.Pings, err)
			}
		}()
	}
}
