package ulp

import (
	"fmt"
	"github.com/iwkit/iwkit/finding"
	"strconv"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// Proto is a storage protocol.
type Proto uint8

const (
	None    Proto = iota
	NVMe          // NVMe over Fabrics, RDMA transport
	ISER          // iSER (RFC 7145) carrying iSCSI (RFC 7143)
	SMBD          // SMB Direct ([MS-SMBD]) carrying SMB2
	RPCRDMA       // RPC-over-RDMA v1 (RFC 8166) carrying ONC RPC / NFS
	numProtos
)

var protoNames = [numProtos]string{"", "nvme", "iser", "smbd", "rpcrdma"}

func (p Proto) String() string {
	if p < numProtos {
		return protoNames[p]
	}
	return "?"
}

// ParseProto reads a protocol name as --decode-as takes it.
func ParseProto(s string) (Proto, bool) {
	for i, n := range protoNames {
		if n != "" && n == s {
			return Proto(i), true
		}
	}
	return None, false
}

// Protos lists the protocol names.
func Protos() []string { return protoNames[1:] }

// WellKnown gives the protocol of a responder's TCP port (ulp-reference.md
// §5.1): 4420 NVMe-oF, 3260 iSER, 5445 SMB Direct, 20049 NFS/RDMA.
func WellKnown(port uint16) Proto {
	switch port {
	case 4420:
		return NVMe
	case 3260:
		return ISER
	case 5445:
		return SMBD
	case 20049:
		return RPCRDMA
	}
	return None
}

// At says where a unit was seen.
type At struct {
	Frame int // frame of the unit's first octet
	Last  int // frame of its last octet
	Time  time.Time
}

// Finding is something a ULP check found.
type Finding struct {
	Code     finding.Code
	Severity finding.Severity
	Message  string
	Frame    int
	Time     time.Time
	I2R      bool // raised on the direction from the MPA initiator
}

// Command is one ULP task as linked to the RDMA operations that moved its
// data: reported when its response is decoded (or at the end, unanswered).
type Command struct {
	Proto Proto
	// Name is the command, e.g. "Write", "READ(10)", "NFSv3 READ",
	// "SMB2 READ".
	Name string
	// ID is the task identifier: NVMe CID, iSCSI ITT, SMB2 MessageId, RPC
	// XID (IDField names its field; AppendID writes it).
	ID uint64
	// Status is the response's status, named ("Success", "GOOD",
	// "STATUS_SUCCESS", "SUCCESS"); OK says whether it is a success.
	Status string
	OK     bool
	// Answered is false for a command the capture ends without a response to.
	Answered bool
	// Expected is the octets the command said would move by RDMA; Moved
	// those that did (Writes into and Read Responses out of its STags);
	// Inline the data octets carried in the Sends.
	Expected, Moved, Inline uint64
	Reads, Writes           int
	// Read and Write say the command moves data to the advertiser (the
	// responder RDMA-Writes) or from it (the responder RDMA-Reads).
	Read, Write bool
	// STags are the handles the command advertised (the first NSTags,
	// at most MaxSTags).
	STags  [MaxSTags]uint32
	NSTags int
	// RequestFrame is the frame of the command Send's last segment,
	// ResponseFrame that of the response's.
	RequestFrame, ResponseFrame int
	Start, End                  time.Time
	Latency                     time.Duration
	// Object is the file or share the command acts on, from the names the
	// connection learnt (objects.go): an SMB2 \\server\share\dir\file, an
	// NFS dir/name; "" when the capture does not hold what named it.
	Object string
	// What the command addresses, from its request's fields (Has says
	// which are set): NVMe NSID, SLBA and NLB; iSCSI LUN, SCSI LBA and
	// blocks; the file offset and count of an NFS or SMB2 READ or WRITE.
	Has                              Has
	NSID                             uint32
	LUN, LBA, Blocks, Offset, Length uint64
	// Queue, Transfer and Backend split Latency at the command's first
	// and last data operation (phase.go); Phased says they are set.
	Queue, Transfer, Backend time.Duration
	Phased                   bool
	// QueueName is what the protocol calls the command's queue (depth.go:
	// "qid 1 cntlid 1 nqn...", "iqn... tsih 0x1"; an SMB2 command's share,
	// sharequeue.go; "" when it names none).
	QueueName string
	// RDMA are the operations that moved the command's data, in the
	// order they began (rdma.go: at most MaxXfers); RDMADropped counts
	// those not listed.
	RDMA        []Xfer
	RDMADropped int
}

// Has says which of a Command's target fields are set.
type Has uint8

const (
	HasNSID Has = 1 << iota
	HasLUN
	HasLBA
	HasBlocks
	HasOffset
	HasLength
)

// target copies the request message's addressing fields into c.
func (c *Command) target(f []FV) {
	for _, fv := range f {
		x := fv.V.U
		switch fv.ID {
		case fNVMeNSID:
			c.NSID, c.Has = uint32(x), c.Has|HasNSID
		case fISCSILUN:
			c.LUN, c.Has = x, c.Has|HasLUN
		case fNVMeSLBA, fSCSILBA:
			c.LBA, c.Has = x, c.Has|HasLBA
		case fNVMeNLB, fSCSIBlocks:
			c.Blocks, c.Has = x, c.Has|HasBlocks
		case fNFSOffset, fSMB2Offset:
			c.Offset, c.Has = x, c.Has|HasOffset
		case fNFSCount, fSMB2Length:
			c.Length, c.Has = x, c.Has|HasLength
		}
	}
}

// Limits bounds a Conn's memory. Zero fields take the defaults.
type Limits struct {
	// Tasks caps the outstanding commands per connection (default 1024);
	// beyond it the oldest is dropped unreported.
	Tasks int
	// Message caps the octets of one reassembled Send kept for decoding
	// (default 65536); the rest is counted, not kept.
	Message int
}

func (l Limits) withDefaults() Limits {
	if l.Tasks <= 0 {
		l.Tasks = 1024
	}
	if l.Message <= 0 {
		l.Message = 65536
	}
	return l
}

// MaxSTags is the number of STags a Command lists.
const MaxSTags = 8

// task is an outstanding command.
type task struct {
	cmd    Command
	key    uint64 // in Conn.tasks: the command's ID, but for RPC backchannel calls (rpcTaskKey)
	stags  [MaxSTags]uint32
	nstags int
	seq    uint64 // creation order, for eviction
	// data collects Read Response octets the decoder wants to see (NVMe
	// Connect data fetched by RDMA Read); nil when not wanted.
	data     []byte
	wantData int
	// proto-specific
	opc        uint8
	fctype     uint8
	aux        uint64 // NVMe: NLB+1; iSCSI: immediate length; RPC: program<<32|vers
	aux2       uint64
	failed     bool
	readOctets uint64 // of Moved, by RDMA Read
	reads      int    // entries in Conn.sinks
	ph         phaseMarks
	// reply holds what the responder RDMA-Wrote into an RPC call's reply
	// chunk (RFC 8166 §3.6), for decoding an RDMA_NOMSG reply; nil else.
	reply *replyChunk
	// what the command names (objects.go): the SMB2 share and file and
	// the FileId a CLOSE forgets; the NFS procedure, and the name an
	// NFSv4 GETFH in the call returns the handle of.
	share, file string
	fid         [16]byte
	proc        uint32
	getfh       string
}

// stagUse is an STag advertised by a task.
type stagUse struct {
	t            *task
	base, length uint64
	// mayWrite: the responder may RDMA-Write into it; mayRead: it may
	// RDMA-Read from it.
	mayWrite, mayRead bool
	used              bool
	inv               bool // the advertiser asked for remote invalidation
	zeroOK            bool // an unused segment is no sign of trouble
}

// sendAsm reassembles the untagged Send messages (QN 0) of one direction.
type sendAsm struct {
	open   bool
	msn    uint32
	next   uint32 // next MO expected
	broken bool   // segments missing in the middle: not decoded
	cut    bool   // octets missing from the capture: a prefix is kept
	buf    []byte
	total  int // octets of the message, kept or not
	first  int
	start  time.Time
	inv    uint32
	opcode decode.Opcode
	view   []byte // a one-segment Send's payload, decoded in place
}

// Conn is the ULP state of one iWARP connection. Feed it the MPA frames
// (Handshake) and every DDP segment (Segment) in wire order; it does no
// I/O and keeps no state outside itself.
type Conn struct {
	lim   Limits
	proto Proto
	// how the protocol was chosen: forced, private data, port, content
	how    string
	port   uint16 // the responder's port
	forced bool
	sure   bool // chosen by the caller or the private data
	// confirmed: content (or the private data) matched the protocol; until
	// then no finding above note is raised
	confirmed bool
	tries     [2]int
	decoded   int
	// opened is the task the Send being decoded opened (openedSeq tells
	// a reused task apart)
	opened    *task
	openedSeq uint64
	// fromStart: the MPA handshake was seen, so every advertisement is
	// in the capture (unknown STags are news).
	fromStart bool
	// lossy: a Send was lost to the capture (gap): an unknown task or STag
	// may be the lost Send's, so neither is reported
	lossy bool

	asm   [2]sendAsm
	tasks map[uint64]*task
	stags map[uint32]*stagUse
	sinks map[uint32]*task // Read Request sink STag → task (responder's reads)
	seq   uint64

	disc      Discovery // NVMe-oF discovery entries and Connects (discovery.go)
	msg       Message
	findings  []Finding
	done      []Command
	freeTasks []*task
	freeUses  []*stagUse
	lastSinks [8]uint32 // sink STags of the latest Read Responses
	nSinks    int

	objs objects
	nvme nvmeState
	rpc  rpcState
	iser iserState
	smb  smbState
	rdma rdmaState // the commands' RDMA operations held (rdma.go)

	// Queue and depth (depth.go): the analyzer's name of the connection,
	// the capture's end, the time and frame of the unit being fed, the
	// outstanding commands over time, what the protocol calls the queue.
	connName  string
	end, now  time.Time
	nowFrame  int
	depth     Depth
	windows   [NumWindows]Window
	sqTail    int
	qn        queueNames
	finishing bool

	// Stats counts what this connection decoded.
	Stats *Stats
}

// NewConn returns the ULP state of a connection whose responder listens on
// port. force, when not None, is the protocol --decode-as chose.
func NewConn(port uint16, force Proto, lim Limits) *Conn {
	c := &Conn{lim: lim.withDefaults(), port: port}
	if force != None {
		c.proto, c.forced, c.sure, c.how = force, true, true, "forced"
	}
	return c
}

// Proto is the protocol chosen so far (None: none yet, or none at all).
func (c *Conn) Proto() Proto { return c.proto }

// GaveUp says the connection carries none of the storage protocols: its
// first Sends matched none, no port or private data named one, nothing was
// forced. The caller may drop the Conn: it will not decode anything.
func (c *Conn) GaveUp() bool {
	return c.proto == None && !c.forced && c.tries[0] >= maxTries && c.tries[1] >= maxTries
}

// Gap tells the Conn the capture lost octets of the connection: Sends may
// be gone, so unknown tasks and STags are no longer news.
func (c *Conn) Gap() { c.lossy = true }

// Findings returns the findings raised by the last call and forgets them.
func (c *Conn) Findings() []Finding {
	f := c.findings
	c.findings = c.findings[:0]
	return f
}

// Done returns the commands completed by the last call and forgets them.
func (c *Conn) Done() []Command {
	d := c.done
	c.done = c.done[:0]
	return d
}

func (c *Conn) finding(at At, i2r bool, code finding.Code, format string, args ...any) {
	sev := code.Severity()
	if !c.confirmed && sev != finding.Note {
		return // a guess is never an error
	}
	c.findings = append(c.findings, Finding{Code: code, Severity: sev, Message: fmt.Sprintf(format, args...), Frame: at.Last, Time: at.Time, I2R: i2r})
}

// Handshake feeds an MPA Request (i2r) or Reply. It returns the decoded
// ULP private data, or nil.
func (c *Conn) Handshake(at At, i2r bool, f *decode.MPAFrame) *Message {
	c.fromStart = true
	c.now, c.nowFrame = at.Time, at.Last
	pd := f.ULPPrivateData()
	if !c.sure {
		if p := classifyPD(pd, f, i2r, c.port); p != None {
			c.proto, c.sure, c.how = p, p != ISER && p != SMBD || WellKnown(c.port) == p, "private data"
			c.confirmed = c.sure
		}
	}
	if c.proto == None && WellKnown(c.port) != None {
		c.proto, c.how = WellKnown(c.port), "port"
	}
	m := &c.msg
	switch c.proto {
	case NVMe:
		m.reset(NVMe)
		if c.nvmePD(at, i2r, f, pd, m) {
			return m
		}
	case RPCRDMA:
		m.reset(RPCRDMA)
		if c.rpcPD(at, i2r, pd, m) {
			return m
		}
	case ISER:
		m.reset(ISER)
		if c.iserPD(at, i2r, pd, m) {
			return m
		}
	case SMBD:
		m.reset(SMBD)
		if c.smbPD(at, i2r, f, pd, m) {
			return m
		}
	}
	return nil
}

// classifyPD is step 1 of ulp-reference.md §5.2: the ULP part of the MPA
// private data.
func classifyPD(pd []byte, f *decode.MPAFrame, i2r bool, port uint16) Proto {
	switch {
	case len(pd) >= 8 && pd[0] == 0xF6 && pd[1] == 0xAB && pd[2] == 0x0E && pd[3] == 0x18:
		return RPCRDMA
	case len(pd) == 32 && le16(pd) == 0 && nvmePDShape(pd, i2r, f.Reject):
		return NVMe
	case len(pd) == 4 && f.Reject && le16(pd) == 0 && le16(pd[2:]) >= 1 && le16(pd[2:]) <= 9 && port == 4420:
		return NVMe
	case len(pd) == 4 && pd[1] == 0 && pd[2] == 0 && pd[3] == 0 && pd[0]&0x3F == 0 && port == 3260:
		return ISER
	case len(pd) == 8 && port == 5445:
		return SMBD
	}
	return None
}

// Segment feeds one decoded DDP segment sent in direction i2r (from the
// MPA initiator). missing is the octets of the FPDU the capture lost. It
// returns the Message the segment completes, or nil.
func (c *Conn) Segment(at At, i2r bool, s *decode.Segment, missing int) *Message {
	if c.proto == None && c.tries[0] >= maxTries && c.tries[1] >= maxTries && !c.forced {
		return nil // gave up: not a storage protocol
	}
	c.now, c.nowFrame = at.Time, at.Last
	switch op := s.RDMAP.Opcode; {
	case s.DDP.Tagged && op == decode.OpWrite:
		c.rdmaWrite(at, i2r, s, missing)
		return nil
	case s.DDP.Tagged && op == decode.OpReadResponse:
		return c.readResponse(at, i2r, s, missing)
	case !s.DDP.Tagged && op == decode.OpReadRequest && s.DDP.QN == decode.QNReadReq:
		c.readRequest(at, i2r, &s.ReadRequest)
		return nil
	case op == decode.OpTerminate:
		c.terminate(at, i2r, &s.Terminate)
		return nil
	case !s.DDP.Tagged && s.DDP.QN == decode.QNSend && (op == decode.OpSend || op == decode.OpSendInv || op == decode.OpSendSE || op == decode.OpSendSEInv):
		return c.send(at, i2r, s, missing)
	}
	return nil
}

// classifyPrefix is the octets of a multi-segment Send kept while no
// protocol is chosen: enough for every header the content tests read.
const classifyPrefix = 1024

// maxTries is the Sends per direction content detection looks at before
// it gives up on a connection.
const maxTries = 8

func dirIdx(i2r bool) int {
	if i2r {
		return 0
	}
	return 1
}

// send reassembles a Send and decodes it at its L segment.
func (c *Conn) send(at At, i2r bool, s *decode.Segment, missing int) *Message {
	a := &c.asm[dirIdx(i2r)]
	h := &s.DDP
	if h.MO == 0 && h.Last {
		// A Send in one segment: decode it in place, no copy.
		inv, op, buf := s.InvalidateSTag, s.RDMAP.Opcode, a.buf[:0]
		*a = sendAsm{msn: h.MSN, buf: buf, first: at.Frame, start: at.Time, inv: inv, opcode: op, total: len(s.Payload) + missing}
		a.view = s.Payload[:min(len(s.Payload), c.lim.Message)]
		m := c.message(at, i2r, a)
		a.view = nil
		return m
	}
	if !a.open || h.MSN != a.msn {
		if h.MO != 0 {
			a.open = false
			c.lossy = true
			return nil // its head was lost
		}
		*a = sendAsm{open: true, msn: h.MSN, buf: a.buf[:0], first: at.Frame, start: at.Time, inv: s.InvalidateSTag, opcode: s.RDMAP.Opcode}
	}
	if h.MO != a.next {
		a.broken = true
	}
	n := len(s.Payload)
	limit := c.lim.Message
	if c.proto == None {
		limit = classifyPrefix // undecided: the headers decide
	}
	if room := limit - len(a.buf); room > 0 && !a.broken && !a.cut {
		a.buf = append(a.buf, s.Payload[:min(n, room)]...)
	}
	a.total += n + missing
	a.next = h.MO + uint32(n+missing)
	if missing > 0 {
		a.cut = true // the capture has a prefix only (snaplen, gap): decoders see it
	}
	if !h.Last {
		return nil
	}
	a.open = false
	if a.broken {
		c.lossy = true
		return nil
	}
	return c.message(at, i2r, a)
}

// message decodes one complete Send.
func (c *Conn) message(at At, i2r bool, a *sendAsm) *Message {
	b := a.buf
	if a.view != nil {
		b = a.view
	}
	if len(b) < a.total {
		b = b[:len(b):len(b)] // truncated by Limits.Message: decoders see the prefix
	}
	if !c.confirmed {
		// The protocol is a guess until a Send's content (or the private
		// data) confirms it: a port guess decodes nothing before that, and
		// a forced protocol raises no finding (c.finding).
		p := classifySend(b, i2r)
		switch {
		case p != None && p == c.proto:
			c.confirmed = true
		case p != None && !c.forced && (c.proto == None || !c.sure):
			c.proto, c.how, c.confirmed = p, "content", true
		case c.forced || c.sure && c.proto != None:
			// decode what the caller or the private data chose
		default:
			c.tries[dirIdx(i2r)]++
			if c.tries[0] >= maxTries && c.tries[1] >= maxTries {
				c.proto = None // a port guess content never confirmed
			}
			return nil
		}
	}
	m := &c.msg
	m.reset(c.proto)
	ok := false
	switch c.proto {
	case NVMe:
		ok = c.nvmeSend(at, i2r, a, b, m)
	case RPCRDMA:
		ok = c.rpcSend(at, i2r, a, b, m)
	case ISER:
		ok = c.iserSend(at, i2r, a, b, m)
	case SMBD:
		ok = c.smbSend(at, i2r, a, b, m)
	}
	if !ok {
		c.opened = nil
		m.reset(c.proto)
		m.u(fULPUndec, uint64(a.total))
		m.Summary = append(m.Summary, protoTitle[c.proto]...)
		m.Summary = append(m.Summary, " undecoded payload, "...)
		m.Summary = strconv.AppendInt(m.Summary, int64(a.total), 10)
		m.Summary = append(m.Summary, " octets"...)
		return m
	}
	if t := c.opened; t != nil && t.seq == c.openedSeq {
		t.cmd.target(m.F)
		c.xferSend(t, a.first, at, t.cmd.Inline) // the command's own data, in its Send
	}
	c.opened = nil
	c.decoded++
	if c.Stats == nil {
		c.Stats = &Stats{}
	}
	c.Stats.Messages[c.proto]++
	return m
}

var protoTitle = [numProtos]string{"", "NVMe", "iSER", "SMB Direct", "RPC-over-RDMA"}

// classifySend is steps 2 and 3 of ulp-reference.md §5.2: a Send's content.
func classifySend(b []byte, i2r bool) Proto {
	switch {
	case nvmeLooksLike(b, i2r):
		return NVMe
	case rpcLooksLike(b):
		return RPCRDMA
	case iserLooksLike(b, i2r):
		return ISER
	case smbLooksLike(b, i2r):
		return SMBD
	}
	return None
}

// --- tasks and STags -------------------------------------------------------

// newTask registers an outstanding command; a task with the same ID still
// outstanding is returned in old.
func (c *Conn) newTask(at At, p Proto, id uint64, name string) (t, old *task) {
	if c.tasks == nil {
		c.tasks = map[uint64]*task{}
		c.stags = map[uint32]*stagUse{}
		c.sinks = map[uint32]*task{}
	}
	old = c.tasks[id]
	if old != nil {
		c.dropTask(old)
	}
	if len(c.tasks) >= c.lim.Tasks {
		var oldest *task
		for _, x := range c.tasks {
			if oldest == nil || x.seq < oldest.seq {
				oldest = x
			}
		}
		c.dropTask(oldest)
	}
	c.seq++
	if n := len(c.freeTasks); n > 0 {
		t = c.freeTasks[n-1]
		c.freeTasks = c.freeTasks[:n-1]
		*t = task{seq: c.seq}
	} else {
		t = &task{seq: c.seq}
	}
	t.cmd = Command{Proto: p, Name: name, ID: id, RequestFrame: at.Last, Start: at.Time}
	t.key = id
	c.tasks[id] = t
	c.depthChanged()
	if p == NVMe {
		c.nvmeSQTail()
	}
	if c.opened == nil { // the message's fields are its first command's (an SMB2 compound's first)
		c.opened, c.openedSeq = t, t.seq // its target is read from the message once decoded
	}
	return t, old
}

// advertise records an STag the task names.
func (c *Conn) advertise(t *task, stag uint32, base, length uint64, mayWrite, mayRead, inv bool) *stagUse {
	if t.nstags < MaxSTags {
		t.stags[t.nstags] = stag
		t.nstags++
	}
	var u *stagUse
	if n := len(c.freeUses); n > 0 {
		u = c.freeUses[n-1]
		c.freeUses = c.freeUses[:n-1]
	} else {
		u = &stagUse{}
	}
	*u = stagUse{t: t, base: base, length: length, mayWrite: mayWrite, mayRead: mayRead, inv: inv}
	if len(c.stags) < 4*c.lim.Tasks {
		c.stags[stag] = u
	}
	t.cmd.Read = t.cmd.Read || mayWrite
	t.cmd.Write = t.cmd.Write || mayRead
	return u
}

func (c *Conn) dropTask(t *task) {
	for _, s := range t.stags[:t.nstags] {
		if u := c.stags[s]; u != nil && u.t == t {
			delete(c.stags, s)
			if len(c.freeUses) < 64 {
				c.freeUses = append(c.freeUses, u)
			}
		}
	}
	if t.reads > 0 { // Read Requests not yet answered
		for k, x := range c.sinks {
			if x == t {
				delete(c.sinks, k)
			}
		}
	}
	if t.reply != nil {
		c.rpc.kept -= t.reply.kept
		t.reply = nil
	}
	if c.tasks[t.key] == t {
		c.forgetXfers(t)
		delete(c.tasks, t.key)
		c.depthChanged()
		c.shareLeave(t)
		if len(c.freeTasks) < 64 && t.data == nil {
			c.freeTasks = append(c.freeTasks, t)
		}
	}
}

func (c *Conn) task(id uint64) *task {
	if c.tasks == nil {
		return nil
	}
	return c.tasks[id]
}

// rdmaWrite counts a tagged Write segment against the STag's task.
func (c *Conn) rdmaWrite(at At, i2r bool, s *decode.Segment, missing int) {
	if c.proto == None {
		return
	}
	u := c.stags[s.DDP.STag]
	if u == nil {
		if c.fromStart && !c.lossy && c.decoded > 0 && s.DDP.Last && c.stags != nil {
			c.finding(at, i2r, CodeSTagUnknown, "RDMA Write to STag 0x%08x, which no outstanding %s command advertised (ulp-reference.md §6.1)", s.DDP.STag, protoTitle[c.proto])
		}
		return
	}
	if !u.mayWrite && !u.used {
		c.finding(at, i2r, CodeSTagWrongOp, "RDMA Write into STag 0x%08x, which %s %s advertised for the responder to read from, not to write (ulp-reference.md §6.1)", s.DDP.STag, protoTitle[c.proto], u.t.cmd.Name)
	}
	u.used = true
	u.t.dataOp(at.Time, at.Time)
	c.xferWrite(u.t, at, s, missing)
	u.t.cmd.Moved += uint64(len(s.Payload) + missing) // what the wire moved, captured or not
	if u.t.wantData > 0 && c.proto == NVMe {
		nvmeLogData(u.t, s, missing) // a discovery log page
	}
	if u.t.reply != nil {
		c.replyWrite(u.t, s, missing)
	}
	if s.DDP.Last {
		u.t.cmd.Writes++
	}
}

// readRequest links a Read Request's Data Source STag to its task.
func (c *Conn) readRequest(at At, i2r bool, r *decode.ReadRequest) {
	if c.proto == None {
		return
	}
	u := c.stags[r.SrcSTag]
	if u == nil {
		if c.fromStart && !c.lossy && c.decoded > 0 && c.stags != nil {
			c.finding(at, i2r, CodeSTagUnknown, "RDMA Read Request from STag 0x%08x, which no outstanding %s command advertised (ulp-reference.md §6.1)", r.SrcSTag, protoTitle[c.proto])
		}
		return
	}
	if !u.mayRead {
		c.finding(at, i2r, CodeSTagWrongOp, "RDMA Read Request from STag 0x%08x, which %s %s advertised for the responder to write into, not to read (ulp-reference.md §6.1)", r.SrcSTag, protoTitle[c.proto], u.t.cmd.Name)
	}
	u.used = true
	u.t.dataOp(at.Time, at.Time) // the target's first RDMA operation, when it reads
	u.t.cmd.Reads++
	c.xferReadRequest(u.t, at, r)
	if len(c.sinks) < 4*c.lim.Tasks {
		c.sinks[r.SinkSTag] = u.t
		u.t.reads++
	}
	if u.t.wantData > 0 && r.SrcTO == u.base {
		u.t.aux2 = r.SinkTO
	}
}

// readResponse counts a Read Response segment against the task whose Read
// Request named its sink STag.
func (c *Conn) readResponse(at At, i2r bool, s *decode.Segment, missing int) *Message {
	if c.sinks == nil {
		return nil
	}
	t := c.sinks[s.DDP.STag]
	if t == nil {
		return nil
	}
	t.dataOp(at.Time, at.Time)
	t.xferReadResponse(at, s, missing)
	t.cmd.Moved += uint64(len(s.Payload) + missing)
	t.readOctets += uint64(len(s.Payload) + missing)
	var m *Message
	if t.wantData > 0 {
		off := s.DDP.TO - t.aux2
		if off == uint64(len(t.data)) && len(t.data) < t.wantData && missing == 0 {
			t.data = append(t.data, s.Payload[:min(len(s.Payload), t.wantData-len(t.data))]...)
			if len(t.data) == t.wantData && c.proto == NVMe {
				m = c.nvmeConnectData(t)
			}
		}
	}
	if s.DDP.Last {
		delete(c.sinks, s.DDP.STag)
		t.reads--
		c.lastSinks[c.nSinks%len(c.lastSinks)] = s.DDP.STag
		c.nSinks++
	}
	return m
}

// terminate checks a Terminate sent by the ULP's responder that blames a
// Read Response into one of its own Read Request sinks: on iWARP a Read
// Response is a tagged placement, so the sink STag needs remote write
// rights (InfiniBand does not ask for them); SPDK's NVMe-oF target failed
// discovery over iWARP this way.
func (c *Conn) terminate(at At, i2r bool, t *decode.Terminate) {
	if i2r || c.proto == None || !t.HasDDP || !t.TermDDP.Tagged {
		return
	}
	if !(t.Layer == 0 && t.EType == 1 && t.Code <= 0x02 || t.Layer == 1 && t.EType == 1 && t.Code == 0x00) {
		return
	}
	stag := t.TermDDP.STag
	known := c.sinks[stag] != nil
	for _, s := range c.lastSinks[:min(c.nSinks, len(c.lastSinks))] {
		known = known || s == stag
	}
	if known {
		c.finding(at, false, CodeReadSinkRights, "the %s responder terminated on the Read Response into its own Read sink STag 0x%08x: on iWARP an RDMA Read sink needs remote write access (the Read Response is a tagged placement); SPDK's NVMe-oF discovery failed this way (RFC 5040 §6.4)", protoTitle[c.proto], stag)
	}
}

// complete ends a task with its response: checks the linking and reports
// the command. inv is the Send with Invalidate's STag (0: a plain Send).
func (c *Conn) complete(at At, t *task, a *sendAsm, status string, ok bool, m *Message) {
	cmd := &t.cmd
	cmd.Status, cmd.OK, cmd.Answered = status, ok, true
	cmd.ResponseFrame, cmd.End = at.Last, at.Time
	cmd.Latency = at.Time.Sub(cmd.Start)
	cmd.setPhases(&t.ph)
	if a != nil && (a.opcode == decode.OpSendInv || a.opcode == decode.OpSendSEInv) {
		found := false
		for _, s := range t.stags[:t.nstags] {
			if s == a.inv {
				found = true
			}
		}
		if !found {
			c.finding(at, false, CodeInvalidateForeign, "%s response for %s invalidates STag 0x%08x, which is not one of the command's STags (ulp-reference.md §6.1)", protoTitle[c.proto], cmd.Name, a.inv)
		} else if u := c.stags[a.inv]; u != nil && !u.inv {
			c.finding(at, false, CodeInvalidateNotAsked, "%s response for %s invalidates STag 0x%08x, which the advertiser did not offer for remote invalidation (ulp-reference.md §6.1)", protoTitle[c.proto], cmd.Name, a.inv)
		}
	}
	if ok && !t.failed {
		for _, s := range t.stags[:t.nstags] {
			u := c.stags[s]
			if u == nil || u.t != t || u.used || u.zeroOK || u.length == 0 {
				continue
			}
			c.finding(at, false, CodeSTagUnused, "%s %s completed successfully but STag 0x%08x (%d octets) was never used by an RDMA Write or Read (ulp-reference.md §6.1)", protoTitle[c.proto], cmd.Name, s, u.length)
		}
	}
	cmd.STags, cmd.NSTags = t.stags, t.nstags
	cmd.QueueName = c.taskQueue(t)
	c.dropTask(t)
	c.done = append(c.done, *cmd)
	c.count(cmd)
	if m != nil && (m.Cmd == nil || m.into > 0) { // the first command a message completes, and an SMB2 compound member's
		m.addLink(&c.done[len(c.done)-1])
	}
}

// Finish reports the commands still outstanding (unanswered) at the end of
// the capture, in creation order.
func (c *Conn) Finish() {
	var ts []*task
	for _, t := range c.tasks {
		ts = append(ts, t)
	}
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].seq < ts[j-1].seq; j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
	c.finishing = true // what is left is outstanding at the end, not answered
	for _, t := range ts {
		t.cmd.STags, t.cmd.NSTags = t.stags, t.nstags
		t.cmd.QueueName = c.taskQueue(t)
		c.done = append(c.done, t.cmd)
		c.count(&t.cmd)
	}
	c.finishQueue(ts)
	for _, t := range ts {
		c.dropTask(t)
	}
}

func appendDur(b []byte, d time.Duration) []byte {
	switch {
	case d < time.Microsecond:
		return append(strconv.AppendInt(b, int64(d), 10), "ns"...)
	case d < time.Millisecond:
		return append(strconv.AppendFloat(b, float64(d)/1e3, 'f', 1, 64), "µs"...)
	case d < time.Second:
		return append(strconv.AppendFloat(b, float64(d)/1e6, 'f', 2, 64), "ms"...)
	}
	return append(strconv.AppendFloat(b, d.Seconds(), 'f', 3, 64), "s"...)
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func le64(b []byte) uint64 { return uint64(le32(b)) | uint64(le32(b[4:]))<<32 }
func be16(b []byte) uint16 { return uint16(b[0])<<8 | uint16(b[1]) }
func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
func be64(b []byte) uint64 { return uint64(be32(b))<<32 | uint64(be32(b[4:])) }

// cstr returns the NUL- (or space-) terminated ASCII string at the start of b.
func cstr(b []byte) string {
	n := 0
	for n < len(b) && b[n] != 0 {
		n++
	}
	for n > 0 && b[n-1] == ' ' {
		n--
	}
	return string(b[:n])
}

// idFields are the fields a command's ID is, by protocol.
var idFields = [numProtos]FieldID{NVMe: fNVMeCID, ISER: fISCSIITT, SMBD: fSMB2MsgID, RPCRDMA: fRPCXID}

// IDField is the field of the ULP table that a command of protocol p is
// identified by (nvme.cid, iscsi.itt, smb2.msg_id, rpc.xid); nil for none.
func IDField(p Proto) *Field {
	if p <= None || p >= numProtos {
		return nil
	}
	return &fieldTable[idFields[p]]
}

// AppendID appends the ID of a command of protocol p in its field's
// display form, as -V, -e and the summaries write it: iSCSI ITTs and RPC
// XIDs in 0x-hex, NVMe CIDs and SMB2 MessageIds in decimal.
func AppendID(b []byte, p Proto, id uint64) []byte {
	f := IDField(p)
	if f == nil {
		return strconv.AppendUint(b, id, 10)
	}
	return f.AppendValue(b, decode.Value{Kind: decode.KindUint, U: id})
}
