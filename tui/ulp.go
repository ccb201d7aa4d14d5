package tui

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"time"
	"unsafe"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/ulp"
)

// The storage-protocol layer (package ulp) in iwtui. The index keeps the
// summary of each row that completes a ULP message, the protocol of each
// connection, the completed commands and the STags advertised; the
// message's fields are decoded again when its row is shown, by running the
// pipeline over the row's connection up to it: a message's decoding and
// its link to its command need the connection's state.

// Cmd is a completed storage-protocol command (analyze.KindCommand), as
// the index keeps it: ulp.Command's fields for the commands view, without
// its times (Rel and Latency say when), its STags in Index.cmdSTags.
type Cmd struct {
	Name, Status                string
	ID                          uint64 // NVMe CID, iSCSI ITT, SMB2 MessageId, RPC XID
	Expected, Moved             uint64
	Latency                     time.Duration
	Rel                         int64 // its request, ns since the first frame
	Conn                        int32
	RequestFrame, ResponseFrame int32
	Inline                      uint32
	Reads, Writes               uint16
	stags                       uint32 // first in Index.cmdSTags
	nstags                      uint8
	xfers                       uint32 // first in Index.cmdXfers (commands.go)
	nxfers                      uint8
	xdropped                    uint16
	Proto                       ulp.Proto
	OK, Answered                bool
	Object                      string // the file or share (ulp.Command.Object)
}

// Label is the command as the commands view and the STags view name it:
// protocol, name and task identifier.
func (c *Cmd) Label() string {
	return fmt.Sprintf("%s %s id %s", c.Proto, c.Name, ulp.AppendID(nil, c.Proto, c.ID)) // the id field's base (ulp owns it)
}

// Advert is an STag one peer advertised to the other: in a ULP command
// (NVMe SGL key, iSER header STag, SMB2 channel descriptor, RPC-over-RDMA
// chunk), or in a Send of rping's struct rping_rdma_info.
type Advert struct {
	Frame int32
	Cmd   int32 // the command (Index.cmds), -1 for an rping Send
	// An rping Send's buffer: an untagged Send of exactly 16 octets read
	// as rping's advertisement, shown only for an STag the capture then
	// uses.
	Buf  uint64
	Size uint32
}

// maxGuesses: no rping-style advertisement is taken once the index keeps
// this many advertisements.
const maxGuesses = 4096

// ulpText keeps the list summaries of the rows that complete a ULP
// message (iwdump's text after "|"): 12 octets a message and the text,
// in blocks that are never copied.
type ulpText struct {
	refs   []ulpRef // by row, increasing
	blocks [][]byte
}

type ulpRef struct {
	row int32
	off uint32 // block<<ulpBlockBits | offset in the block
	n   uint16
}

const (
	ulpBlockBits = 20 // 1 MiB blocks
	ulpMaxText   = 200
)

func (t *ulpText) add(row int, text []byte) {
	text = text[:min(len(text), ulpMaxText)]
	k := len(t.blocks) - 1
	if k < 0 || len(t.blocks[k])+len(text) > cap(t.blocks[k]) {
		t.blocks = append(t.blocks, make([]byte, 0, 1<<ulpBlockBits))
		k++
	}
	t.refs = append(t.refs, ulpRef{row: int32(row), off: uint32(k<<ulpBlockBits | len(t.blocks[k])), n: uint16(len(text))})
	t.blocks[k] = append(t.blocks[k], text...)
}

// find returns the summary of row i, false if it completes no message.
func (t *ulpText) find(i int) ([]byte, bool) {
	k := sort.Search(len(t.refs), func(k int) bool { return int(t.refs[k].row) >= i })
	if k == len(t.refs) || int(t.refs[k].row) != i {
		return nil, false
	}
	r := t.refs[k]
	b := t.blocks[r.off>>ulpBlockBits]
	o := int(r.off & (1<<ulpBlockBits - 1))
	return b[o : o+int(r.n)], true
}

func (t *ulpText) bytes() int {
	return cap(t.refs)*int(unsafe.Sizeof(ulpRef{})) + len(t.blocks)<<ulpBlockBits
}

// ulpPDU notes, on the indexing goroutine under the index lock, what row
// (about to be appended) carries for the ULP views.
func (x *indexer) ulpPDU(r *analyze.Record, c *ConnInfo, row int) {
	ix := x.ix
	if r.ULP != nil {
		ix.ulp.add(row, r.ULP.Summary)
		if c != nil && c.Proto == "" {
			c.Proto = r.ULP.Proto.String()
		}
		return
	}
	if p := &r.PDU.PDU; mayAdvertise(p) {
		x.advert(r, p.Seg.Payload)
	}
}

// advert notes the buffer a PDU's payload may advertise (mayAdvertise).
// rping (librdmacm's example, and endpoint/rping) advertises a buffer in
// a 16-octet Send: struct rping_rdma_info {buf, rkey, size}, in network
// order.
func (x *indexer) advert(r *analyze.Record, payload []byte) {
	ix := x.ix
	if len(ix.adverts) >= maxGuesses {
		return
	}
	stag := binary.BigEndian.Uint32(payload[8:])
	k := [2]uint64{uint64(r.Conn.ID), uint64(stag)}
	if _, ok := ix.adverts[k]; !ok {
		ix.adverts[k] = Advert{Frame: int32(r.LastFrame), Cmd: -1, Buf: binary.BigEndian.Uint64(payload), Size: binary.BigEndian.Uint32(payload[12:])}
	}
}

// mayAdvertise reports whether p has the shape of rping's buffer
// advertisement: a 16-octet untagged Send, whole.
func mayAdvertise(p *decode.PDU) bool {
	s := &p.Seg
	return !p.IsMPAFrame && p.SegErr == nil && !s.DDP.Tagged && s.DDP.Last && s.DDP.QN == 0 && s.DDP.MO == 0 &&
		s.RDMAP.Opcode == decode.OpSend && len(s.Payload) == 16
}

// command keeps a completed command and the STags it advertised.
func (x *indexer) command(r *analyze.Record) {
	ix := x.ix
	m := r.Cmd
	c := Cmd{Name: m.Name, Status: m.Status, ID: m.ID, Expected: m.Expected, Moved: m.Moved, Latency: m.Latency,
		Rel: int64(r.Rel - m.Latency), Conn: int32(r.Conn.ID), RequestFrame: int32(m.RequestFrame), ResponseFrame: int32(m.ResponseFrame),
		Inline: uint32(min(m.Inline, 1<<32-1)), Reads: uint16(min(m.Reads, 1<<16-1)), Writes: uint16(min(m.Writes, 1<<16-1)),
		stags: uint32(len(ix.cmdSTags)), nstags: uint8(m.NSTags), Proto: m.Proto, OK: m.OK, Answered: m.Answered, Object: m.Object}
	ix.cmdSTags = append(ix.cmdSTags, m.STags[:m.NSTags]...)
	ix.keepXfers(&c, m) // commands.go
	for _, stag := range m.STags[:m.NSTags] {
		k := [2]uint64{uint64(c.Conn), uint64(stag)}
		if a, ok := ix.adverts[k]; !ok || a.Cmd < 0 {
			ix.adverts[k] = Advert{Frame: c.RequestFrame, Cmd: int32(len(ix.cmds))}
		}
	}
	ix.cmds = append(ix.cmds, c)
}

// CmdSTags returns the STags command c advertised.
func (ix *Index) CmdSTags(c *Cmd) []uint32 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return append([]uint32(nil), ix.cmdSTags[c.stags:c.stags+uint32(c.nstags)]...)
}

// advertiser names what advertised an STag (under the index lock).
func (ix *Index) advertiser(a Advert) string {
	if a.Cmd < 0 {
		return fmt.Sprintf("rping Send: buf 0x%x size %d", a.Buf, a.Size)
	}
	return ix.cmds[a.Cmd].Label()
}

// NumCmds is the number of commands so far.
func (ix *Index) NumCmds() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.cmds)
}

// Cmd returns command i.
func (ix *Index) Cmd(i int) Cmd {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.cmds[i]
}

// Cmds returns a copy of the commands so far.
func (ix *Index) Cmds() []Cmd {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return append([]Cmd(nil), ix.cmds...)
}

// HasULP reports whether row i completes a storage-protocol message.
func (ix *Index) HasULP(i int) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	_, ok := ix.ulp.find(i)
	return ok
}

// appendULPSummary ends the summary of row i, if it completes a ULP
// message, with the message's as iwdump prints it (" | NVMe Read ...").
func (ix *Index) appendULPSummary(b []byte, i int) []byte {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if t, ok := ix.ulp.find(i); ok {
		b = append(b, " | "...)
		b = append(b, t...)
	}
	return b
}

// ulpKey names a PDU the same way in the index and in a replay.
type ulpKey struct {
	dir  uint8
	seq  uint32
	last int
}

// ulpCache holds the ULP messages of one connection from frame from on,
// decoded by one replay.
type ulpCache struct {
	conn, from, to int
	msgs           map[ulpKey]*ulp.Message
	err            error // the replay failed: for the whole connection
}

// ulpWindow is how many messages a replay keeps around the row asked for
// (a quarter before it, the rest after), so that scrolling either way does
// not replay again at every row.
var ulpWindow = 2048

// ulpBefore returns the row of the ULP message n messages (of any
// connection) before row i's, or i.
func (ix *Index) ulpBefore(i, n int) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	refs := ix.ulp.refs
	k := sort.Search(len(refs), func(k int) bool { return int(refs[k].row) >= i })
	if k == len(refs) {
		return i
	}
	return int(refs[max(k-n, 0)].row)
}

// ulpMessage returns the ULP message row i (r, connection c) completes,
// from the cache or from a replay of the connection's frames up to it
// and a window on; or, when there is none to show, a note saying why.
// With l.async set (the screen's event loop runs), the replay runs on its
// own goroutine and the note says so until it is done.
func (l *loader) ulpMessage(c *ConnInfo, i int, r *Row) (*ulp.Message, string) {
	if uc := l.ulp; uc != nil && uc.conn == c.ID && uc.from <= int(r.Last) && int(r.Last) <= uc.to {
		if uc.err != nil {
			return nil, "storage protocol not decoded again: " + uc.err.Error()
		}
		return uc.msgs[ulpKey{r.Dir, r.Seq, int(r.Last)}], ""
	}
	if l.run == nil {
		return nil, ""
	}
	from := int(min(r.Last, l.ix.Row(l.ix.ulpBefore(i, ulpWindow/4)).Last))
	if l.async == nil {
		l.ulp = l.replay(c, from)
		return l.ulpMessage(c, i, r)
	}
	if !l.replaying {
		l.replaying = true
		go func() {
			uc := l.replay(c, from)
			l.async(func() { l.ulp, l.replaying = uc, false })
		}()
	}
	return nil, fmt.Sprintf("storage protocol: reading connection %d again up to frame %d ...", c.ID, r.Last)
}

// replay runs the pipeline over connection c's frames (to the last PDU
// indexed) and keeps the ULP messages from frame from on, ulpWindow of
// them. It reads
// only the index and the store (it may run on its own goroutine).
func (l *loader) replay(c *ConnInfo, from int) *ulpCache {
	g := &ulpGrab{from: from, msgs: map[ulpKey]*ulp.Message{}}
	src := &connSource{st: l.ix.store, n: c.First - 1, upto: min(c.Last, l.ix.store.frames()), a: c.Addr[0], b: c.Addr[1], g: g}
	uc := &ulpCache{conn: c.ID, from: from, to: src.upto, msgs: g.msgs}
	if err := l.run(src, g); err != nil && err != errEnough {
		uc.from, uc.to, uc.err = 0, 1<<62, err
	} else if g.full {
		uc.to = g.last // frames after the last message kept are not covered
	}
	return uc
}

var errEnough = fmt.Errorf("enough")

// ulpGrab is the consumer of a replay: it keeps a copy of the messages
// completed from frame from on.
type ulpGrab struct {
	from int
	msgs map[ulpKey]*ulp.Message
	full bool
	last int
}

func (g *ulpGrab) Record(r *analyze.Record) {
	if r.Kind != analyze.KindPDU || r.ULP == nil || r.LastFrame < g.from || g.full {
		return
	}
	g.msgs[ulpKey{uint8(r.Dir), r.Seq, r.LastFrame}] = keepMessage(r.ULP)
	g.last = r.LastFrame
	g.full = len(g.msgs) >= ulpWindow
}

// keepMessage copies what the tree shows of a message, which is valid only
// during the record's call: its fields, the octets they alias, the
// commands it completes with their RDMA operations (ulp.Message.Clone).
func keepMessage(m *ulp.Message) *ulp.Message { return m.Clone() }

// connSource yields the stored frames after n of one connection (the TCP
// segments between its two addresses), until upto or the grab is full.
type connSource struct {
	st      *store
	n, upto int
	a, b    netip.AddrPort
	buf     []byte
	p       pcap.Packet
	g       *ulpGrab
}

func (x *connSource) Next(f *pcap.Frame) error {
	for x.n < x.upto {
		if x.g.full {
			return errEnough
		}
		x.n++
		var err error
		if x.buf, err = x.st.read(x.n, f, x.buf); err != nil {
			continue
		}
		if pcap.DecodeTCP(f.LinkType, f.Data, &x.p) != nil {
			continue
		}
		src := netip.AddrPortFrom(x.p.Src, x.p.SrcPort)
		dst := netip.AddrPortFrom(x.p.Dst, x.p.DstPort)
		if (src == x.a && dst == x.b) || (src == x.b && dst == x.a) {
			return nil
		}
	}
	return io.EOF
}

func (x *connSource) Close() error { return nil }
