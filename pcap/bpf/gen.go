package bpf

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// A filter is a tree of and/or/not over comparisons of one loaded value with
// a constant. Code generation is the classic short-circuit scheme: every
// node jumps to a true label or a false label, so each comparison is
// evaluated at most once per packet and only where libpcap's program would
// evaluate it (a load beyond the captured octets rejects the packet in
// every BPF implementation, so which loads run matters for the verdict).

type node interface{ isNode() }

type andNode struct{ l, r node }
type orNode struct{ l, r node }
type notNode struct{ x node }
type constNode bool

// cmpNode loads a value, masks it (when mask is set), and compares it with k.
type cmpNode struct {
	ld   loadSpec
	mask *uint32
	jmp  uint16 // jmpJEQ, jmpJGT, jmpJGE, jmpJSET
	k    uint32
}

// vlanKernelNode is the first "vlan" on a Linux socket: the tag is either in
// the packet's metadata (the kernel took it out) or, when not, still in the
// packet; the second case shifts later offsets by 4 at run time (M[0]).
type vlanKernelNode struct {
	tpidOff, vidOff uint32
	vid             int // -1: any
}

func (andNode) isNode()        {}
func (orNode) isNode()         {}
func (notNode) isNode()        {}
func (constNode) isNode()      {}
func (cmpNode) isNode()        {}
func (vlanKernelNode) isNode() {}

type loadBase int

const (
	baseAbs    loadBase = iota // absolute offset in the packet
	baseTrans4                 // relative to the IPv4 payload: 4*IHL + net
	baseLen                    // the packet length
)

type loadSpec struct {
	base     loadBase
	size     int    // 1, 2 or 4 octets
	off      uint32 // baseAbs: offset; baseTrans4: offset in the transport header
	net      uint32 // baseTrans4: offset of the IPv4 header
	variable bool   // add the run-time VLAN shift kept in M[0]
}

func maskp(m uint32) *uint32 { return &m }

// at returns a load of size octets at offset off from the network-layer
// type field (rel "type"), the network header ("net") or the link header.
func (p *parser) loadType(off, size int) loadSpec {
	return loadSpec{base: baseAbs, size: size, off: uint32(p.link.typeOff + p.st.shift + off), variable: p.st.variable}
}

func (p *parser) loadNet(off, size int) loadSpec {
	return loadSpec{base: baseAbs, size: size, off: uint32(p.link.netOff + p.st.shift + off), variable: p.st.variable}
}

func (p *parser) loadTrans4(off int) loadSpec {
	return loadSpec{base: baseTrans4, size: 2, off: uint32(off), net: uint32(p.link.netOff + p.st.shift), variable: p.st.variable}
}

// cmp compares a loaded value with k under mask (libpcap gen_mcmp: a mask of
// all ones is no mask; a zero mask makes the test constant, and libpcap's
// optimiser then drops the load).
func cmp(ld loadSpec, mask uint32, k uint32) node {
	switch mask {
	case 0xffffffff:
		return cmpNode{ld: ld, jmp: jmpJEQ, k: k}
	case 0:
		return constNode(k == 0)
	}
	return cmpNode{ld: ld, mask: maskp(mask), jmp: jmpJEQ, k: k}
}

// genLinktype tests the network-layer protocol of the frame (an Ethernet
// type), per link type (libpcap gen_linktype).
func (p *parser) genLinktype(t token, ethertype uint32) (node, error) {
	switch p.link.rawIP {
	case 1:
		switch ethertype {
		case ethertypeIP:
			return cmpNode{ld: loadSpec{size: 1, off: 0}, mask: maskp(0xf0), jmp: jmpJEQ, k: 0x40}, nil
		case ethertypeIPv6:
			return cmpNode{ld: loadSpec{size: 1, off: 0}, mask: maskp(0xf0), jmp: jmpJEQ, k: 0x60}, nil
		}
		return constNode(false), nil
	case 4:
		return constNode(ethertype == ethertypeIP), nil
	case 6:
		return constNode(ethertype == ethertypeIPv6), nil
	}
	if ethertype <= etherMTU {
		return nil, p.unsupported(t, fmt.Sprintf("a link-layer protocol number of 1500 or less (%d: 802.2 LLC)", ethertype))
	}
	return cmpNode{ld: p.loadType(0, 2), jmp: jmpJEQ, k: ethertype}, nil
}

func (p *parser) mustLinktype(ethertype uint32) node {
	n, err := p.genLinktype(token{}, ethertype)
	if err != nil {
		panic(err) // only for types above 1500
	}
	return n
}

// genHost: an IPv4 host or network (libpcap gen_host).
func (p *parser) genHost(t token, addr, mask uint32, q qual) (node, error) {
	what := "host"
	if q.addr == qaNet {
		what = "net"
	}
	switch q.proto {
	case qpDefault:
		ip, err := p.genHostop(t, addr, mask, q.dir, ethertypeIP, 12, 16)
		if err != nil {
			return nil, err
		}
		arp, _ := p.genHostop(t, addr, mask, q.dir, ethertypeARP, 14, 24)
		rarp, _ := p.genHostop(t, addr, mask, q.dir, ethertypeRARP, 14, 24)
		return orNode{orNode{ip, arp}, rarp}, nil
	case qpLink:
		return nil, p.errAt(t, "link-layer modifier applied to %s", what)
	case qpIP:
		return p.genHostop(t, addr, mask, q.dir, ethertypeIP, 12, 16)
	case qpARP:
		return p.genHostop(t, addr, mask, q.dir, ethertypeARP, 14, 24)
	case qpRARP:
		return p.genHostop(t, addr, mask, q.dir, ethertypeRARP, 14, 24)
	case qpIP6:
		return nil, p.errAt(t, "'ip6' modifier applied to ip %s", what)
	}
	return nil, p.errAt(t, "'%s' modifier applied to %s", protoNames[q.proto], what)
}

func (p *parser) genHostop(t token, addr, mask uint32, dir qdir, ethertype uint32, src, dst int) (node, error) {
	var n node
	switch dir {
	case qdSrc:
		n = cmp(p.loadNet(src, 4), mask, addr)
	case qdDst:
		n = cmp(p.loadNet(dst, 4), mask, addr)
	case qdAnd:
		n = andNode{cmp(p.loadNet(src, 4), mask, addr), cmp(p.loadNet(dst, 4), mask, addr)}
	case qdDefault, qdOr:
		n = orNode{cmp(p.loadNet(src, 4), mask, addr), cmp(p.loadNet(dst, 4), mask, addr)}
	default:
		return nil, p.unsupported(t, "802.11 address qualifiers")
	}
	lt, err := p.genLinktype(t, ethertype)
	if err != nil {
		return nil, err
	}
	return andNode{lt, n}, nil
}

// genHost6: an IPv6 host or network (libpcap gen_host6).
func (p *parser) genHost6(t token, addr, mask [16]byte, q qual) (node, error) {
	what := "host"
	if q.addr == qaNet {
		what = "net"
	}
	switch q.proto {
	case qpDefault, qpIP6:
	case qpLink:
		return nil, p.errAt(t, "link-layer modifier applied to ip6 %s", what)
	default:
		return nil, p.errAt(t, "'%s' modifier applied to ip6 %s", protoNames[q.proto], what)
	}
	word := func(off int) node {
		var n node = constNode(true)
		for i := 0; i < 4; i++ {
			a := uint32(addr[4*i])<<24 | uint32(addr[4*i+1])<<16 | uint32(addr[4*i+2])<<8 | uint32(addr[4*i+3])
			m := uint32(mask[4*i])<<24 | uint32(mask[4*i+1])<<16 | uint32(mask[4*i+2])<<8 | uint32(mask[4*i+3])
			c := cmp(p.loadNet(off+4*i, 4), m, a)
			if i == 0 {
				n = c
			} else {
				n = andNode{n, c}
			}
		}
		return n
	}
	var n node
	switch q.dir {
	case qdSrc:
		n = word(8)
	case qdDst:
		n = word(24)
	case qdAnd:
		n = andNode{word(8), word(24)}
	case qdDefault, qdOr:
		n = orNode{word(8), word(24)}
	default:
		return nil, p.unsupported(t, "802.11 address qualifiers")
	}
	return andNode{p.mustLinktype(ethertypeIPv6), n}, nil
}

// genEHost: an Ethernet address, compared from its last four octets.
func genEHost(mac [6]byte, dir qdir) (node, error) {
	at := func(off uint32) node {
		w := uint32(mac[2])<<24 | uint32(mac[3])<<16 | uint32(mac[4])<<8 | uint32(mac[5])
		h := uint32(mac[0])<<8 | uint32(mac[1])
		return andNode{
			cmpNode{ld: loadSpec{size: 4, off: off + 2}, jmp: jmpJEQ, k: w},
			cmpNode{ld: loadSpec{size: 2, off: off}, jmp: jmpJEQ, k: h},
		}
	}
	switch dir {
	case qdSrc:
		return at(6), nil
	case qdDst:
		return at(0), nil
	case qdAnd:
		return andNode{at(6), at(0)}, nil
	case qdDefault, qdOr:
		return orNode{at(6), at(0)}, nil
	}
	return nil, fmt.Errorf("802.11 address qualifiers are not supported")
}

// genPort: IPv4 TCP/UDP/SCTP ports v1..v2 (libpcap gen_port/gen_portrange):
// the protocol, not a non-first fragment, then the port found past the IPv4
// header and its options.
//
// Without a protocol libpcap ORs the three protocols' tests; since they
// differ only in the protocol number, the tree says it once: (sctp or tcp
// or udp) and not a fragment and the port, which loads the same octets on
// every path and so gives the same verdicts.
func (p *parser) genPort(v1, v2 uint32, proto int, dir qdir) node {
	frag := notNode{cmpNode{ld: p.loadNet(6, 2), jmp: jmpJSET, k: 0x1fff}}
	b := andNode{andNode{p.ipProtoIn(p.loadNet(9, 1), proto), frag},
		portDir(dir, func(off int) node { return portAtom(p.loadTrans4(off), v1, v2) })}
	return andNode{p.mustLinktype(ethertypeIP), b}
}

// genPort6: IPv6 ports, in a header right after the fixed one.
func (p *parser) genPort6(v1, v2 uint32, proto int, dir qdir) node {
	b := andNode{p.ipProtoIn(p.loadNet(6, 1), proto),
		portDir(dir, func(off int) node { return portAtom(p.loadNet(40+off, 2), v1, v2) })}
	return andNode{p.mustLinktype(ethertypeIPv6), b}
}

// ipProtoIn tests the protocol octet for proto, or for any protocol with
// ports when proto is undefined.
func (p *parser) ipProtoIn(ld loadSpec, proto int) node {
	if proto != protoUndef {
		return cmpNode{ld: ld, jmp: jmpJEQ, k: uint32(proto)}
	}
	return orNode{orNode{cmpNode{ld: ld, jmp: jmpJEQ, k: ipprotoSCTP},
		cmpNode{ld: ld, jmp: jmpJEQ, k: ipprotoTCP}},
		cmpNode{ld: ld, jmp: jmpJEQ, k: ipprotoUDP}}
}

func portDir(dir qdir, atom func(off int) node) node {
	switch dir {
	case qdSrc:
		return atom(0)
	case qdDst:
		return atom(2)
	case qdAnd:
		return andNode{atom(0), atom(2)}
	}
	return orNode{atom(0), atom(2)}
}

func portAtom(ld loadSpec, v1, v2 uint32) node {
	if v1 == v2 {
		return cmpNode{ld: ld, jmp: jmpJEQ, k: v1}
	}
	return andNode{cmpNode{ld: ld, jmp: jmpJGE, k: v1}, notNode{cmpNode{ld: ld, jmp: jmpJGT, k: v2}}}
}

// genProto: "[ip|ip6|ether] proto N" (libpcap gen_proto).
func (p *parser) genProto(t token, v uint32, proto qproto, dir qdir) (node, error) {
	if dir != qdDefault {
		return nil, p.errAt(t, "direction applied to 'proto'")
	}
	switch proto {
	case qpDefault:
		a, _ := p.genProto(t, v, qpIP, dir)
		b, _ := p.genProto(t, v, qpIP6, dir)
		return orNode{a, b}, nil
	case qpLink:
		return p.genLinktype(t, v)
	case qpIP:
		return andNode{p.mustLinktype(ethertypeIP), cmpNode{ld: p.loadNet(9, 1), jmp: jmpJEQ, k: v}}, nil
	case qpIP6:
		// The protocol right after the fixed header, or after one
		// fragment header.
		frag := andNode{cmpNode{ld: p.loadNet(6, 1), jmp: jmpJEQ, k: ipprotoFrag}, cmpNode{ld: p.loadNet(40, 1), jmp: jmpJEQ, k: v}}
		return andNode{p.mustLinktype(ethertypeIPv6), orNode{cmpNode{ld: p.loadNet(6, 1), jmp: jmpJEQ, k: v}, frag}}, nil
	case qpARP, qpRARP:
		return nil, p.errAt(t, "%s does not encapsulate another protocol", protoNames[proto])
	}
	return nil, p.errAt(t, "'%s proto' is bogus", protoNames[proto])
}

// protoAbbrev: a protocol name standing alone (libpcap gen_proto_abbrev).
func (p *parser) protoAbbrev(t token, proto qproto) (node, error) {
	ipOnly := func(v uint32) (node, error) { return p.genProto(t, v, qpIP, qdDefault) }
	both := func(v uint32) (node, error) { return p.genProto(t, v, qpDefault, qdDefault) }
	switch proto {
	case qpTCP:
		return both(ipprotoTCP)
	case qpUDP:
		return both(ipprotoUDP)
	case qpSCTP:
		return both(ipprotoSCTP)
	case qpICMP:
		return ipOnly(ipprotoICMP)
	case qpIGMP:
		return ipOnly(ipprotoIGMP)
	case qpIGRP:
		return ipOnly(ipprotoIGRP)
	case qpVRRP, qpCARP:
		return ipOnly(ipprotoVRRP)
	case qpPIM:
		return both(ipprotoPIM)
	case qpAH:
		return both(ipprotoAH)
	case qpESP:
		return both(ipprotoESP)
	case qpICMP6:
		return p.genProto(t, ipprotoICMPv6, qpIP6, qdDefault)
	case qpIP:
		return p.genLinktype(t, ethertypeIP)
	case qpIP6:
		return p.genLinktype(t, ethertypeIPv6)
	case qpARP:
		return p.genLinktype(t, ethertypeARP)
	case qpRARP:
		return p.genLinktype(t, ethertypeRARP)
	case qpLink:
		return nil, p.errAt(t, "link layer applied in wrong context")
	}
	return nil, p.unsupported(t, fmt.Sprintf("protocol %q", t.text))
}

// genVLAN: "vlan [ID]" (libpcap gen_vlan). Offsets of everything after it
// move past the tag.
func (p *parser) genVLAN(t token, vid int) (node, error) {
	if !p.link.ether {
		return nil, p.errAt(t, "no VLAN support for %s", p.link.name)
	}
	defer func() { p.st.vlans++ }()
	if p.kernel && p.st.vlans == 0 && !p.st.variable {
		n := vlanKernelNode{tpidOff: uint32(p.link.typeOff + p.st.shift), vidOff: uint32(p.link.netOff + p.st.shift), vid: vid}
		p.st.variable = true
		p.usesM = true
		return n, nil
	}
	tag := p.loadType(0, 2)
	var n node = orNode{orNode{
		cmpNode{ld: tag, jmp: jmpJEQ, k: ethertype8021Q},
		cmpNode{ld: tag, jmp: jmpJEQ, k: ethertype8021AD}},
		cmpNode{ld: tag, jmp: jmpJEQ, k: ethertypeQinQ}}
	if vid >= 0 {
		n = andNode{n, cmpNode{ld: p.loadNet(0, 2), mask: maskp(0x0fff), jmp: jmpJEQ, k: uint32(vid)}}
	}
	p.st.shift += 4
	return n, nil
}

// --- code generation ---

// The generator keeps what it knows at each point of the program: which
// value the A and X registers hold, and the outcome of comparisons already
// made on the way there (the packet does not change, so "octets 12-13 are
// 0x86dd" stays true). With that it skips reloading a value, and resolves a
// comparison whose outcome is already known without loading anything. A
// load skipped that way was executed before on every path that reaches the
// point, so skipping it cannot change which packets a load beyond the
// captured octets rejects. What is known at a label is what holds on every
// jump into it.

type label int

// valKey names a loaded value: the load, and the mask applied to it.
type valKey struct {
	ld     loadSpec
	masked bool
	mask   uint32
	anc    uint32 // ancillary load (skfADOff + n), when ld.size == 0
}

type cmpKey struct {
	v   valKey
	jmp uint16
	k   uint32
}

// xKey names what the X register holds.
type xKey int

const (
	xNone   xKey = iota
	xMem0        // M[0]
	xIHL         // 4*(IHL) of the IPv4 header at xNet
	xVarIHL      // M[0] + 4*(IHL) of the IPv4 header at M[0]+xNet
)

type genState struct {
	a     *valKey
	x     xKey
	xNet  uint32
	known map[cmpKey]bool
	eq    map[valKey]uint32
}

func (s *genState) clone() *genState {
	c := &genState{a: s.a, x: s.x, xNet: s.xNet, known: make(map[cmpKey]bool, len(s.known)), eq: make(map[valKey]uint32, len(s.eq))}
	for k, v := range s.known {
		c.known[k] = v
	}
	for k, v := range s.eq {
		c.eq[k] = v
	}
	return c
}

// meet keeps what holds in both s and o.
func (s *genState) meet(o *genState) {
	if s.a == nil || o.a == nil || *s.a != *o.a {
		s.a = nil
	}
	if s.x != o.x || s.xNet != o.xNet {
		s.x = xNone
	}
	for k, v := range s.known {
		if ov, ok := o.known[k]; !ok || ov != v {
			delete(s.known, k)
		}
	}
	for k, v := range s.eq {
		if ov, ok := o.eq[k]; !ok || ov != v {
			delete(s.eq, k)
		}
	}
}

// forgetVariable drops what depended on M[0], which just changed.
func (s *genState) forgetVariable() {
	if s.a != nil && s.a.ld.variable {
		s.a = nil
	}
	if s.x == xMem0 || s.x == xVarIHL {
		s.x = xNone
	}
	for k := range s.known {
		if k.v.ld.variable {
			delete(s.known, k)
		}
	}
	for k := range s.eq {
		if k.ld.variable {
			delete(s.eq, k)
		}
	}
}

// outcome returns the result of comparing v with k by jmp when known.
func (s *genState) outcome(v valKey, jmp uint16, k uint32) (res, ok bool) {
	if r, ok := s.known[cmpKey{v, jmp, k}]; ok {
		return r, true
	}
	if x, ok := s.eq[v]; ok {
		switch jmp {
		case jmpJEQ:
			return x == k, true
		case jmpJGT:
			return x > k, true
		case jmpJGE:
			return x >= k, true
		case jmpJSET:
			return x&k != 0, true
		}
	}
	return false, false
}

type asmIns struct {
	ins    bpf.RawInstruction
	jt, jf label // conditional jumps; ja uses jt
	isJump bool
}

type codegen struct {
	err      error
	code     []asmIns
	labels   []int // label -> instruction index; -1 until placed
	incoming map[label][]*genState
	cur      *genState // nil: the current point cannot be reached
}

func (g *codegen) newLabel() label {
	g.labels = append(g.labels, -1)
	return label(len(g.labels) - 1)
}

// place puts label l here; what is known afterwards is what holds on every
// way in (the jumps to l and, when reachable, falling through).
func (g *codegen) place(l label) {
	g.labels[l] = len(g.code)
	in := g.incoming[l]
	delete(g.incoming, l)
	var st *genState
	if g.cur != nil {
		st = g.cur
	}
	for _, s := range in {
		if st == nil {
			st = s.clone()
		} else {
			st.meet(s)
		}
	}
	g.cur = st
}

func (g *codegen) reachable(l label) bool { return len(g.incoming[l]) > 0 }

func (g *codegen) emit(op uint16, k uint32) {
	g.code = append(g.code, asmIns{ins: bpf.RawInstruction{Op: op, K: k}})
}

// goTo jumps to l unconditionally; what follows is unreachable until a
// label with jumps into it is placed.
func (g *codegen) goTo(l label) {
	if g.cur == nil {
		return
	}
	g.incoming[l] = append(g.incoming[l], g.cur)
	g.code = append(g.code, asmIns{ins: bpf.RawInstruction{Op: opJMP | jmpJA}, jt: l, isJump: true})
	g.cur = nil
}

// branch compares the value v in A with k and jumps to t or f, or, when the
// outcome is known, straight to one of them.
func (g *codegen) branch(v valKey, jmp uint16, k uint32, t, f label) {
	if g.cur == nil {
		return
	}
	if r, ok := g.cur.outcome(v, jmp, k); ok {
		if r {
			g.goTo(t)
		} else {
			g.goTo(f)
		}
		return
	}
	ts, fs := g.cur.clone(), g.cur
	ts.known[cmpKey{v, jmp, k}] = true
	fs.known[cmpKey{v, jmp, k}] = false
	if jmp == jmpJEQ {
		ts.eq[v] = k
	}
	g.incoming[t] = append(g.incoming[t], ts)
	g.incoming[f] = append(g.incoming[f], fs)
	g.code = append(g.code, asmIns{ins: bpf.RawInstruction{Op: opJMP | jmp | srcK, K: k}, jt: t, jf: f, isJump: true})
	g.cur = nil
}

// errRejectsAll is libpcap's verdict on an expression no packet can match.
var errRejectsAll = fmt.Errorf("expression rejects all packets")

// generate compiles the tree into a program that returns snap for a match
// and 0 otherwise.
func generate(root node, snap uint32, usesM bool) ([]bpf.RawInstruction, error) {
	g := &codegen{incoming: map[label][]*genState{}, cur: &genState{known: map[cmpKey]bool{}, eq: map[valKey]uint32{}}}
	if usesM {
		g.emit(opLD|mdIMM, 0)
		g.emit(opST, 0)
	}
	t, f := g.newLabel(), g.newLabel()
	g.cond(root, t, f)
	if g.err != nil {
		return nil, g.err
	}
	if !g.reachable(t) {
		return nil, errRejectsAll
	}
	if !g.reachable(f) {
		return []bpf.RawInstruction{{Op: opRET | retK, K: snap}}, nil
	}
	g.place(t)
	g.emit(opRET|retK, snap)
	g.cur = nil
	g.place(f)
	g.emit(opRET|retK, 0)
	return g.assemble()
}

func (g *codegen) cond(n node, t, f label) {
	if g.cur == nil {
		return // unreachable: nothing to generate
	}
	switch n := n.(type) {
	case andNode:
		mid := g.newLabel()
		g.cond(n.l, mid, f)
		g.place(mid)
		g.cond(n.r, t, f)
	case orNode:
		mid := g.newLabel()
		g.cond(n.l, t, mid)
		g.place(mid)
		g.cond(n.r, t, f)
	case notNode:
		g.cond(n.x, f, t)
	case constNode:
		if n {
			g.goTo(t)
		} else {
			g.goTo(f)
		}
	case cmpNode:
		v := valKey{ld: n.ld}
		if n.mask != nil {
			v.masked, v.mask = true, *n.mask
		}
		if _, ok := g.cur.outcome(v, n.jmp, n.k); !ok {
			g.loadValue(v)
		}
		g.branch(v, n.jmp, n.k, t, f)
	case vlanKernelNode:
		g.vlanKernel(n, t, f)
	case relNode:
		g.relation(n, t, f)
	default:
		panic(fmt.Sprintf("bpf codegen: unknown node %T", n))
	}
}

// relation: the accessors' conditions, then both sides computed and
// compared (libpcap gen_relation). Scratch memory M[1..15] holds
// intermediate values; M[0] is the VLAN shift.
func (g *codegen) relation(n relNode, t, f label) {
	if n.cond != nil {
		mid := g.newLabel()
		g.cond(n.cond, mid, f)
		g.place(mid)
		if g.cur == nil {
			return
		}
	}
	tt, ff := t, f
	if n.neg {
		tt, ff = f, t
	}
	if k, ok := constVal(n.a1); ok {
		g.evalA(n.a0, 0)
		g.rawBranch(opJMP|n.jmp|srcK, k, tt, ff)
		return
	}
	g.evalA(n.a1, 0)
	g.emit(opST, 1)
	g.evalA(n.a0, 1)
	g.emit(opLDX|mdMEM, 1)
	g.cur.x = xNone
	g.rawBranch(opJMP|n.jmp|srcX, 0, tt, ff)
}

// rawBranch jumps on a computed value: nothing is learnt about the packet.
func (g *codegen) rawBranch(op uint16, k uint32, t, f label) {
	if g.cur == nil {
		return
	}
	ts, fs := g.cur.clone(), g.cur
	g.incoming[t] = append(g.incoming[t], ts)
	g.incoming[f] = append(g.incoming[f], fs)
	g.code = append(g.code, asmIns{ins: bpf.RawInstruction{Op: op, K: k}, jt: t, jf: f, isJump: true})
	g.cur = nil
}

// evalA computes e into A, using M[d+1...] for intermediate values.
func (g *codegen) evalA(e arith, d int) {
	defer func() { g.cur.a = nil }()
	if k, ok := constVal(e); ok {
		g.emit(opLD|mdIMM, k)
		return
	}
	switch e := e.(type) {
	case aLen:
		g.emit(opLD|szW|mdLEN, 0)
	case aNeg:
		// -A as A * (2^32 - 1): the same value, and golang.org/x/net/bpf's
		// VM runs it (it does not run BPF_NEG).
		g.evalA(e.x, d)
		g.emit(opALU|aluMUL|srcK, 0xffffffff)
	case aBin:
		if k, ok := constVal(e.r); ok {
			if k == 0 && (e.op == aluDIV || e.op == aluMOD) {
				g.fail("division by zero")
				return
			}
			if k > 31 && (e.op == aluLSH || e.op == aluRSH) {
				g.fail("shift by more than 31 bits")
				return
			}
			g.evalA(e.l, d)
			g.emit(opALU|e.op|srcK, k)
			return
		}
		tmp := g.scratch(d)
		g.evalA(e.r, d)
		g.emit(opST, tmp)
		g.evalA(e.l, d+1)
		g.emit(opLDX|mdMEM, tmp)
		g.cur.x = xNone
		g.emit(opALU|e.op|srcX, 0)
	case aLoad:
		g.evalLoad(e, d)
	}
}

func (g *codegen) fail(msg string) {
	if g.err == nil {
		g.err = fmt.Errorf("%s", msg)
	}
}

// scratch is the memory cell for values at depth d.
func (g *codegen) scratch(d int) uint32 {
	if d+1 > 15 {
		g.fail("too many registers needed to evaluate expression")
		return 15
	}
	return uint32(d + 1)
}

// evalLoad: proto[idx:size] into A. A constant index loads at a constant
// offset (from the IPv4 payload: through X = 4*IHL, as for ports); a
// computed one is added to X.
func (g *codegen) evalLoad(e aLoad, d int) {
	sz := sizeBits(e.size)
	k, isConst := constVal(e.idx)
	switch e.base {
	case baseAbs:
		if isConst {
			g.emit(opLD|sz|mdABS, k)
			return
		}
		g.evalA(e.idx, d)
		g.emit(opMISC|miscTAX, 0)
		g.cur.x = xNone
		g.emit(opLD|sz|mdIND, 0)
	case baseNet:
		if isConst {
			g.load(loadSpec{base: baseAbs, size: e.size, off: e.off + k, variable: e.variable}, 0)
			return
		}
		g.evalA(e.idx, d)
		if e.variable {
			g.emit(opLDX|mdMEM, 0)
			g.emit(opALU|aluADD|srcX, 0)
		}
		g.emit(opMISC|miscTAX, 0)
		g.cur.x = xNone
		g.emit(opLD|sz|mdIND, e.off)
	case baseTrans4:
		if isConst {
			g.load(loadSpec{base: baseTrans4, size: e.size, off: k, net: e.off, variable: e.variable}, 0)
			return
		}
		g.evalA(e.idx, d)
		if e.variable {
			tmp := g.scratch(d)
			g.emit(opST, tmp)
			g.cur.x = xNone
			g.load(loadSpec{base: baseTrans4, size: 1, off: 0, net: e.off, variable: true}, 0) // sets X = M[0] + 4*IHL
			g.emit(opLD|mdMEM, tmp)
		} else {
			g.emit(opLDX|szB|mdMSH, e.off)
		}
		g.emit(opALU|aluADD|srcX, 0)
		g.emit(opMISC|miscTAX, 0)
		g.cur.x = xNone
		g.emit(opLD|sz|mdIND, e.off)
	}
}

// loadValue puts v in A, reusing what A already holds.
func (g *codegen) loadValue(v valKey) {
	s := g.cur
	if s.a != nil && *s.a == v {
		return
	}
	raw := v
	raw.masked, raw.mask = false, 0
	if !(v.masked && s.a != nil && *s.a == raw) {
		g.load(v.ld, v.anc)
	}
	if v.masked {
		g.emit(opALU|aluAND|srcK, v.mask)
	}
	vv := v
	s.a = &vv
}

func sizeBits(size int) uint16 {
	switch size {
	case 1:
		return szB
	case 2:
		return szH
	}
	return szW
}

// load emits the load of ld (or of ancillary value anc) into A, setting X
// first when the load is relative to it.
func (g *codegen) load(ld loadSpec, anc uint32) {
	s := g.cur
	if anc != 0 {
		g.emit(opLD|szB|mdABS, anc)
		return
	}
	sz := sizeBits(ld.size)
	switch ld.base {
	case baseLen:
		g.emit(opLD|szW|mdLEN, 0)
	case baseAbs:
		if ld.variable {
			if s.x != xMem0 {
				g.emit(opLDX|mdMEM, 0)
				s.x = xMem0
			}
			g.emit(opLD|sz|mdIND, ld.off)
			return
		}
		g.emit(opLD|sz|mdABS, ld.off)
	case baseTrans4:
		if ld.variable {
			if s.x != xVarIHL || s.xNet != ld.net {
				// X = M[0] + 4*(IHL): libpcap's sequence for a
				// variable link header.
				g.emit(opLDX|mdMEM, 0)
				g.emit(opLD|szB|mdIND, ld.net)
				g.emit(opALU|aluAND|srcK, 0x0f)
				g.emit(opALU|aluLSH|srcK, 2)
				g.emit(opALU|aluADD|srcX, 0)
				g.emit(opMISC|miscTAX, 0)
				s.x, s.xNet = xVarIHL, ld.net
			}
		} else if s.x != xIHL || s.xNet != ld.net {
			g.emit(opLDX|szB|mdMSH, ld.net)
			s.x, s.xNet = xIHL, ld.net
		}
		g.emit(opLD|sz|mdIND, ld.net+ld.off)
	}
}

// vlanKernel: the first "vlan" on a Linux socket. The tag is in the
// packet's metadata, or (not taken out by the kernel) still in the packet,
// in which case later offsets move past it: M[0] += 4, done whether or not
// the in-packet test then finds a tag, as libpcap does.
func (g *codegen) vlanKernel(n vlanKernelNode, t, f label) {
	meta, inpkt := g.newLabel(), g.newLabel()
	present := valKey{anc: skfADOff + skfADVLANTagPresent}
	g.loadValue(present)
	g.branch(present, jmpJEQ, 1, meta, inpkt)

	g.place(inpkt)
	if g.cur != nil {
		g.emit(opLD|mdMEM, 0)
		g.emit(opALU|aluADD|srcK, 4)
		g.emit(opST, 0)
		g.cur.a = nil
		g.cur.forgetVariable()
	}
	tpOK := t
	if n.vid >= 0 {
		tpOK = g.newLabel()
	}
	tpid := valKey{ld: loadSpec{size: 2, off: n.tpidOff}}
	for i, et := range []uint32{ethertype8021Q, ethertype8021AD, ethertypeQinQ} {
		next := f
		if i < 2 {
			next = g.newLabel()
		}
		if g.cur != nil {
			if _, ok := g.cur.outcome(tpid, jmpJEQ, et); !ok {
				g.loadValue(tpid)
			}
		}
		g.branch(tpid, jmpJEQ, et, tpOK, next)
		if i < 2 {
			g.place(next)
		}
	}
	if n.vid >= 0 {
		g.place(tpOK)
		g.cond(cmpNode{ld: loadSpec{size: 2, off: n.vidOff}, mask: maskp(0x0fff), jmp: jmpJEQ, k: uint32(n.vid)}, t, f)
	}
	g.cur = nil
	g.place(meta)
	if n.vid < 0 {
		g.goTo(t)
		return
	}
	tci := valKey{anc: skfADOff + skfADVLANTag, masked: true, mask: 0x0fff}
	if g.cur != nil {
		g.loadValue(tci)
	}
	g.branch(tci, jmpJEQ, uint32(n.vid), t, f)
}

// assemble resolves labels. Unconditional jumps to the next instruction
// are dropped and jumps to an unconditional jump go straight to its target.
// A conditional jump reaches at most 255 instructions ahead; a farther
// target gets a trampoline (an unconditional jump with a 32-bit reach)
// right after the jump.
func (g *codegen) assemble() ([]bpf.RawInstruction, error) {
	// Thread: a label at a ja leads where the ja leads.
	resolve := func(l label) label {
		for i := 0; i < len(g.code); i++ {
			idx := g.labels[l]
			if idx >= len(g.code) {
				return l
			}
			c := g.code[idx]
			if !c.isJump || c.ins.Op&0xf0 != jmpJA || c.jt == l {
				return l
			}
			l = c.jt
		}
		return l
	}
	for i := range g.code {
		if g.code[i].isJump {
			g.code[i].jt = resolve(g.code[i].jt)
			g.code[i].jf = resolve(g.code[i].jf)
		}
	}
	// Drop ja to the next instruction; labels keep their index, which
	// then names the instruction the ja led to.
	var code []asmIns
	newIdx := make([]int, len(g.code)+1)
	for i, c := range g.code {
		newIdx[i] = len(code)
		if c.isJump && c.ins.Op&0xf0 == jmpJA && g.labels[c.jt] == i+1 {
			continue
		}
		code = append(code, c)
	}
	newIdx[len(g.code)] = len(code)
	labels := make([]int, len(g.labels))
	for l, idx := range g.labels {
		if idx >= 0 {
			labels[l] = newIdx[idx]
		} else {
			labels[l] = -1
		}
	}

	n := len(code)
	tramp := make([][2]bool, n) // [i][0]: trampoline for jt, [1]: for jf
	pos := make([]int, n+1)
	for {
		p := 0
		for i := range code {
			pos[i] = p
			p++
			if tramp[i][0] {
				p++
			}
			if tramp[i][1] {
				p++
			}
		}
		pos[n] = p
		changed := false
		for i, c := range code {
			if !c.isJump || c.ins.Op&0xf0 == jmpJA {
				continue
			}
			for s, l := range []label{c.jt, c.jf} {
				if !tramp[i][s] && pos[labels[l]]-(pos[i]+1) > 255 {
					tramp[i][s] = true
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}
	at := func(l label) int { return pos[labels[l]] }
	out := make([]bpf.RawInstruction, 0, pos[n])
	for i, c := range code {
		ins := c.ins
		if !c.isJump {
			out = append(out, ins)
			continue
		}
		here := pos[i] + 1
		if ins.Op&0xf0 == jmpJA {
			ins.K = uint32(at(c.jt) - here)
			out = append(out, ins)
			continue
		}
		var tr []bpf.RawInstruction
		for s, l := range []label{c.jt, c.jf} {
			d := at(l) - here
			if tramp[i][s] {
				tp := here + len(tr)
				tr = append(tr, bpf.RawInstruction{Op: opJMP | jmpJA, K: uint32(at(l) - (tp + 1))})
				d = len(tr) - 1
			}
			if d < 0 || d > 255 {
				return nil, fmt.Errorf("internal error: jump distance %d", d)
			}
			if s == 0 {
				ins.Jt = uint8(d)
			} else {
				ins.Jf = uint8(d)
			}
		}
		out = append(out, ins)
		out = append(out, tr...)
	}
	if len(out) > maxInsns {
		return nil, fmt.Errorf("the program has %d instructions; the kernel takes at most %d", len(out), maxInsns)
	}
	return out, nil
}
