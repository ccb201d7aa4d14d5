package bpf

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gopacket/gopacket/layers"
)

// The parser follows libpcap's grammar.y: "and" and "or" have the same
// precedence and group left to right, "not" binds tighter, and a bare
// address after "and"/"or"/"not" takes the qualifiers of the primitive
// before it ("port 80 or 443", "host a and not b"). Each primitive becomes
// a node as soon as it is parsed, with the link offsets of that moment, so
// that "vlan" shifts everything written after it, as in libpcap.

// Qualifier values. libpcap's Q_* names, grouped by the slot they fill.
type qproto int

const (
	qpUndef qproto = iota
	qpDefault
	qpLink
	qpIP
	qpARP
	qpRARP
	qpSCTP
	qpTCP
	qpUDP
	qpICMP
	qpIGMP
	qpIGRP
	qpPIM
	qpVRRP
	qpCARP
	qpIP6
	qpICMP6
	qpAH
	qpESP
	qpOther // a protocol the compiler does not cover (decnet, iso, ...)
)

var pnames = map[string]qproto{
	"link": qpLink, "ip": qpIP, "arp": qpARP, "rarp": qpRARP, "sctp": qpSCTP, "tcp": qpTCP,
	"udp": qpUDP, "icmp": qpICMP, "igmp": qpIGMP, "igrp": qpIGRP, "pim": qpPIM, "vrrp": qpVRRP,
	"carp": qpCARP, "ip6": qpIP6, "icmp6": qpICMP6, "ah": qpAH, "esp": qpESP,
}

// otherPnames are protocol qualifiers libpcap knows and this compiler does not.
var otherPnames = map[string]bool{
	"radio": true, "atalk": true, "aarp": true, "decnet": true, "lat": true, "sca": true,
	"moprc": true, "mopdl": true, "iso": true, "esis": true, "isis": true, "l1": true,
	"l2": true, "iih": true, "lsp": true, "snp": true, "csnp": true, "psnp": true,
	"clnp": true, "stp": true, "ipx": true, "netbeui": true,
}

var protoNames = map[qproto]string{
	qpLink: "link", qpIP: "ip", qpARP: "arp", qpRARP: "rarp", qpSCTP: "sctp", qpTCP: "tcp",
	qpUDP: "udp", qpICMP: "icmp", qpIGMP: "igmp", qpIGRP: "igrp", qpPIM: "pim", qpVRRP: "vrrp",
	qpCARP: "carp", qpIP6: "ip6", qpICMP6: "icmp6", qpAH: "ah", qpESP: "esp",
}

type qdir int

const (
	qdUndef qdir = iota
	qdDefault
	qdSrc
	qdDst
	qdOr
	qdAnd
	qdWLAN // addr1..4, ra, ta: 802.11 only
)

type qaddr int

const (
	qaUndef qaddr = iota
	qaDefault
	qaHost
	qaNet
	qaPort
	qaPortrange
	qaGateway
	qaProto
	qaProtochain
)

type qual struct {
	proto qproto
	dir   qdir
	addr  qaddr
}

// qerr is what primitives that take no address leave behind: a bare address
// after them is a syntax error.
var qerr = qual{}

// IP protocol numbers and Ethernet types the compiler uses.
const (
	ipprotoICMP   = 1
	ipprotoIGMP   = 2
	ipprotoTCP    = 6
	ipprotoIGRP   = 9
	ipprotoUDP    = 17
	ipprotoFrag   = 44
	ipprotoESP    = 50
	ipprotoAH     = 51
	ipprotoICMPv6 = 58
	ipprotoPIM    = 103
	ipprotoVRRP   = 112
	ipprotoSCTP   = 132
	protoUndef    = -1

	ethertypeIP     = 0x0800
	ethertypeARP    = 0x0806
	ethertypeRARP   = 0x8035
	ethertypeIPv6   = 0x86dd
	ethertype8021Q  = 0x8100
	ethertype8021AD = 0x88a8
	ethertypeQinQ   = 0x9100
	ethertypeLoop   = 0x9000
	etherMTU        = 1500
)

// linkInfo says where a link type puts the network-layer type and header.
type linkInfo struct {
	lt      layers.LinkType
	name    string
	typeOff int  // offset of the Ethernet-type field, -1 for raw IP
	netOff  int  // offset of the network header
	ether   bool // Ethernet header: MAC addresses, VLAN tags
	rawIP   int  // 0: not raw; 1: raw IPv4 or IPv6 (version nibble); 4, 6: one version only
}

func linkFor(lt layers.LinkType) (linkInfo, error) {
	switch lt {
	case layers.LinkTypeEthernet:
		return linkInfo{lt: lt, name: "Ethernet", typeOff: 12, netOff: 14, ether: true}, nil
	case layers.LinkTypeLinuxSLL:
		return linkInfo{lt: lt, name: "Linux cooked v1", typeOff: 14, netOff: 16}, nil
	case layers.LinkTypeLinuxSLL2:
		return linkInfo{lt: lt, name: "Linux cooked v2", typeOff: 0, netOff: 20}, nil
	case layers.LinkTypeRaw, 12, 14:
		return linkInfo{lt: lt, name: "raw IP", typeOff: -1, netOff: 0, rawIP: 1}, nil
	case layers.LinkTypeIPv4:
		return linkInfo{lt: lt, name: "raw IPv4", typeOff: -1, netOff: 0, rawIP: 4}, nil
	case layers.LinkTypeIPv6:
		return linkInfo{lt: lt, name: "raw IPv6", typeOff: -1, netOff: 0, rawIP: 6}, nil
	}
	return linkInfo{}, fmt.Errorf("capture filters on link type %d (%s) are not supported", int(lt), lt)
}

// offState is where the link-layer type and payload are at a point of the
// expression: shifted by the VLAN tags "vlan" has stepped over, plus, on a
// Linux socket after the first "vlan", a shift known only at run time (kept
// in scratch memory M[0]).
type offState struct {
	shift    int
	variable bool
	vlans    int
}

type parser struct {
	expr   string
	toks   []token
	i      int
	link   linkInfo
	kernel bool
	st     offState
	usesM  bool
	depth  int
	match  []int // token index of the ")" closing the "(" at each index
	reads  int   // tokens looked at: the parser's work, which tests bound
}

func (p *parser) peek() token { p.reads++; return p.toks[p.i] }
func (p *parser) peekAt(k int) token {
	p.reads++
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	p.reads++
	t := p.toks[p.i]
	if t.kind != tkEOF {
		p.i++
	}
	return t
}

func (p *parser) errAt(t token, format string, args ...any) *Error {
	return &Error{Expr: p.expr, Pos: t.pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) syntax(t token) *Error {
	if t.kind == tkEOF {
		return &Error{Expr: p.expr, Pos: -1, Msg: "syntax error: unexpected end of expression"}
	}
	return p.errAt(t, "syntax error at %s", t)
}

func (p *parser) unsupported(t token, what string) *Error {
	return &Error{Expr: p.expr, Pos: t.pos, Unsupported: true,
		Msg: what + " is not supported by this filter compiler"}
}

func isKW(t token, kw ...string) bool {
	if t.kind != tkKW {
		return false
	}
	for _, k := range kw {
		if t.text == k {
			return true
		}
	}
	return false
}

func isOp(t token, op string) bool { return t.kind == tkOp && t.text == op }

// relationAfter tells, for the "(" at token i, whether what it encloses is
// arithmetic: the token after its ")" continues a relation (an arithmetic
// operator or a comparison), which no boolean expression can be followed by.
func (p *parser) relationAfter(i int) bool {
	j := p.match[i]
	if j < 0 || j+1 >= len(p.toks) {
		return false
	}
	p.reads++
	t := p.toks[j+1]
	if t.kind != tkOp {
		return false
	}
	_, rel := relops[t.text]
	_, ar := arithOps[t.text]
	return rel || ar
}

func (p *parser) parse() (n node, err error) {
	toks, lerr := lex(p.expr)
	if lerr != nil {
		return nil, lerr
	}
	p.toks = toks
	// Matching parentheses, for relationAfter.
	p.match = make([]int, len(toks))
	var open []int
	for i, t := range toks {
		p.match[i] = -1
		switch {
		case isOp(t, "("):
			open = append(open, i)
		case isOp(t, ")") && len(open) > 0:
			p.match[open[len(open)-1]] = i
			open = open[:len(open)-1]
		}
	}
	if p.peek().kind == tkEOF {
		return constNode(true), nil
	}
	n, _, err = p.parseExpr(qerr)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tkEOF {
		return nil, p.syntax(t)
	}
	return n, nil
}

// parseExpr: expr := term { (and|or) (id|term) }, left to right.
func (p *parser) parseExpr(q0 qual) (node, qual, error) {
	n, q, err := p.parseTerm(q0)
	if err != nil {
		return nil, q, err
	}
	for {
		t := p.peek()
		if t.kind != tkAnd && t.kind != tkOr {
			return n, q, nil
		}
		p.next()
		var m node
		if p.startsID() {
			m, err = p.parseID(q)
		} else {
			m, q, err = p.parseTerm(q)
		}
		if err != nil {
			return nil, q, err
		}
		if t.kind == tkAnd {
			n = andNode{n, m}
		} else {
			n = orNode{n, m}
		}
	}
}

// startsID tells a bare address (which inherits qualifiers) from a term, as
// yacc's lookahead does: look past "not" and "(" at the first token.
func (p *parser) startsID() bool {
	k := 0
	for {
		t := p.peekAt(k)
		if t.kind == tkNot || isOp(t, "(") {
			k++
			continue
		}
		switch t.kind {
		case tkHID, tkHID6, tkEID, tkAID, tkID:
			return true
		case tkNum:
			// A number followed by an operator starts arithmetic.
			nx := p.peekAt(k + 1)
			if nx.kind == tkOp && nx.text != ")" {
				return false
			}
			return true
		}
		return false
	}
}

// maxDepth bounds the nesting of parentheses and "not"s.
const maxDepth = 10000

func (p *parser) enter(t token) error {
	p.depth++
	if p.depth > maxDepth {
		return p.errAt(t, "expression nested too deeply")
	}
	return nil
}

// parseTerm: term := not term | '(' expr ')' | head id | pname | other.
func (p *parser) parseTerm(q0 qual) (node, qual, error) {
	t := p.peek()
	if err := p.enter(t); err != nil {
		return nil, q0, err
	}
	defer func() { p.depth-- }()
	switch {
	case t.kind == tkNot:
		p.next()
		n, q, err := p.parseTerm(q0)
		if err != nil {
			return nil, q, err
		}
		return notNode{n}, q, nil
	case isOp(t, "(") && p.relationAfter(p.i):
		// "(tcp[13] & 2) != 0": parentheses in arithmetic.
		n, err := p.parseRelation()
		return n, qerr, err
	case isOp(t, "("):
		p.next()
		n, _, err := p.parseExpr(q0)
		if err != nil {
			return nil, q0, err
		}
		if c := p.next(); !isOp(c, ")") {
			return nil, q0, p.syntax(c)
		}
		return n, q0, nil
	case t.kind == tkNum, isOp(t, "-"), isKW(t, "len"):
		n, err := p.parseRelation()
		return n, qerr, err
	case t.kind == tkKW && isOp(p.peekAt(1), "["):
		n, err := p.parseRelation()
		return n, qerr, err
	case t.kind != tkKW:
		return nil, qerr, p.syntax(t)
	}
	// A keyword: a protocol qualifier, a direction, an address type, or a
	// primitive of its own.
	q := qual{proto: qpDefault, dir: qdDefault, addr: qaDefault}
	pt := t
	if pr, ok := pnames[t.text]; ok {
		q.proto = pr
		p.next()
	} else if otherPnames[t.text] {
		return nil, qerr, p.unsupported(t, fmt.Sprintf("protocol %q", t.text))
	}
	head := pt.kind == tkKW && q.proto != qpDefault
	nt := p.peek()
	switch {
	case isKW(nt, "src", "dst"):
		p.next()
		q.dir = qdSrc
		other := "dst"
		if nt.text == "dst" {
			q.dir, other = qdDst, "src"
		}
		if a := p.peek(); (a.kind == tkOr || a.kind == tkAnd) && isKW(p.peekAt(1), other) {
			p.next()
			p.next()
			if a.kind == tkOr {
				q.dir = qdOr
			} else {
				q.dir = qdAnd
			}
		}
		if a := p.peek(); isKW(a, "host", "net", "port", "portrange") {
			p.next()
			q.addr = addrOf(a.text)
		}
		head = true
	case isKW(nt, "addr1", "addr2", "addr3", "addr4", "ra", "ta"):
		return nil, qerr, p.unsupported(nt, fmt.Sprintf("the 802.11 qualifier %q", nt.text))
	case isKW(nt, "host", "net", "port", "portrange"):
		p.next()
		q.addr = addrOf(nt.text)
		head = true
	case isKW(nt, "proto"):
		p.next()
		q.addr = qaProto
		head = true
	case isKW(nt, "protochain"):
		return nil, qerr, p.unsupported(nt, "'protochain'")
	case isKW(nt, "gateway"):
		return nil, qerr, p.unsupported(nt, "'gateway' (it needs host name lookups)")
	case isKW(nt, "broadcast", "multicast"):
		return nil, qerr, p.unsupported(nt, fmt.Sprintf("%q", nt.text))
	case head:
		// A protocol name alone: "tcp", "ip6", ...
		n, err := p.protoAbbrev(pt, q.proto)
		return n, qerr, err
	}
	if head {
		n, err := p.parseID(q)
		return n, q, err
	}
	return p.parseOther(t)
}

func addrOf(kw string) qaddr {
	switch kw {
	case "host":
		return qaHost
	case "net":
		return qaNet
	case "port":
		return qaPort
	}
	return qaPortrange
}

// parseOther handles primitives that stand alone: vlan, less, greater, and
// refuses the rest of libpcap's repertoire by name.
func (p *parser) parseOther(t token) (node, qual, error) {
	p.next()
	switch t.text {
	case "vlan":
		vid := -1
		if n := p.peek(); n.kind == tkNum || (isOp(n, "(") && p.peekAt(1).kind == tkNum) {
			v, err := p.parsePnum()
			if err != nil {
				return nil, qerr, err
			}
			if v > 4095 {
				return nil, qerr, p.errAt(n, "VLAN tag %d greater than maximum 4095", v)
			}
			vid = int(v)
		}
		n, err := p.genVLAN(t, vid)
		return n, qerr, err
	case "less", "greater":
		n := p.next()
		if n.kind != tkNum {
			return nil, qerr, p.syntax(n)
		}
		ld := loadSpec{base: baseLen, size: 4}
		if t.text == "less" {
			return notNode{cmpNode{ld: ld, jmp: jmpJGT, k: n.num}}, qerr, nil
		}
		return cmpNode{ld: ld, jmp: jmpJGE, k: n.num}, qerr, nil
	}
	return nil, qerr, p.unsupported(t, fmt.Sprintf("the primitive %q", t.text))
}

// parsePnum: pnum := NUM | '(' pnum ')'.
func (p *parser) parsePnum() (uint32, error) {
	t := p.next()
	if isOp(t, "(") {
		v, err := p.parsePnum()
		if err != nil {
			return 0, err
		}
		if c := p.next(); !isOp(c, ")") {
			return 0, p.syntax(c)
		}
		return v, nil
	}
	if t.kind != tkNum {
		return 0, p.syntax(t)
	}
	return t.num, nil
}

// parseID: an address, number or name under qualifiers q; "not id" and a
// parenthesised list of ids joined by and/or keep q.
func (p *parser) parseID(q qual) (node, error) {
	t := p.next()
	if err := p.enter(t); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	switch t.kind {
	case tkNot:
		n, err := p.parseID(q)
		if err != nil {
			return nil, err
		}
		return notNode{n}, nil
	case tkOp:
		if t.text != "(" {
			break
		}
		n, err := p.parseID(q)
		if err != nil {
			return nil, err
		}
		for {
			c := p.next()
			switch c.kind {
			case tkAnd, tkOr:
				m, err := p.parseID(q)
				if err != nil {
					return nil, err
				}
				if c.kind == tkAnd {
					n = andNode{n, m}
				} else {
					n = orNode{n, m}
				}
				continue
			}
			if !isOp(c, ")") {
				return nil, p.syntax(c)
			}
			return n, nil
		}
	case tkNum:
		if q.addr == qaUndef {
			return nil, p.syntax(t)
		}
		return p.ncode(t, "", t.num, q)
	case tkHID:
		if err := p.checkAddrQual(t, q, ""); err != nil {
			return nil, err
		}
		switch n := p.peek(); {
		case isOp(n, "/"):
			p.next()
			m := p.next()
			if m.kind != tkNum {
				return nil, p.syntax(m)
			}
			if err := p.checkAddrQual(t, q, " and prefix length"); err != nil {
				return nil, err
			}
			return p.mcode(t, t.text, "", m.num, q)
		case isKW(n, "mask"):
			p.next()
			m := p.next()
			if m.kind != tkHID {
				return nil, p.syntax(m)
			}
			if err := p.checkAddrQual(t, q, " and netmask"); err != nil {
				return nil, err
			}
			return p.mcode(t, t.text, m.text, 0, q)
		}
		return p.ncode(t, t.text, 0, q)
	case tkHID6:
		masklen := uint32(128)
		if isOp(p.peek(), "/") {
			p.next()
			m := p.next()
			if m.kind != tkNum {
				return nil, p.syntax(m)
			}
			masklen = m.num
			if err := p.checkAddrQual(t, q, " and prefix length"); err != nil {
				return nil, err
			}
		} else if err := p.checkAddrQual(t, q, ""); err != nil {
			return nil, err
		}
		return p.mcode6(t, masklen, q)
	case tkEID:
		return p.ecode(t, q)
	case tkAID:
		return nil, p.unsupported(t, "ARCnet addresses")
	case tkID:
		return p.scode(t, q)
	}
	return nil, p.syntax(t)
}

// checkAddrQual refuses an IP address under a port or protocol qualifier,
// with libpcap's messages.
func (p *parser) checkAddrQual(t token, q qual, what string) error {
	switch q.addr {
	case qaUndef:
		return p.syntax(t)
	case qaPort:
		return p.errAt(t, "'port' modifier applied to IP address%s", what)
	case qaPortrange:
		return p.errAt(t, "'portrange' modifier applied to IP address%s", what)
	case qaProto:
		return p.errAt(t, "'proto' modifier applied to IP address%s", what)
	}
	return nil
}

// ncode: a number or (short) dotted address under q (libpcap gen_ncode).
func (p *parser) ncode(t token, s string, v uint32, q qual) (node, error) {
	vlen := 32
	if s != "" {
		var ok bool
		v, vlen, ok = atoin(s)
		if !ok {
			return nil, p.errAt(t, "invalid IPv4 address '%s'", s)
		}
	}
	switch q.addr {
	case qaDefault, qaHost, qaNet:
		if q.proto == qpLink {
			return nil, p.errAt(t, "illegal link layer address")
		}
		mask := uint32(0xffffffff)
		if s == "" && q.addr == qaNet {
			// Promote a short net number: "net 10" is 10.0.0.0/8.
			for v != 0 && v&0xff000000 == 0 {
				v <<= 8
				mask <<= 8
			}
		} else {
			// Promote a short address: "host 10.1" is 10.1.0.0/16.
			v <<= uint(32 - vlen)
			mask <<= uint(32 - vlen)
		}
		return p.genHost(t, v, mask, q)
	case qaPort, qaPortrange:
		pr, err := p.portProto(t, q)
		if err != nil {
			return nil, err
		}
		if v > 65535 {
			return nil, p.errAt(t, "illegal port number %d > 65535", v)
		}
		return orNode{p.genPort6(v, v, pr, q.dir), p.genPort(v, v, pr, q.dir)}, nil
	case qaGateway:
		return nil, p.unsupported(t, "'gateway'")
	case qaProto:
		return p.genProto(t, v, q.proto, q.dir)
	case qaProtochain:
		return nil, p.unsupported(t, "'protochain'")
	}
	return nil, p.syntax(t)
}

// portProto maps the protocol qualifier of a port to an IP protocol.
func (p *parser) portProto(t token, q qual) (int, error) {
	switch q.proto {
	case qpUDP:
		return ipprotoUDP, nil
	case qpTCP:
		return ipprotoTCP, nil
	case qpSCTP:
		return ipprotoSCTP, nil
	case qpDefault:
		return protoUndef, nil
	}
	if q.addr == qaPortrange {
		return 0, p.errAt(t, "illegal qualifier of 'portrange'")
	}
	return 0, p.errAt(t, "illegal qualifier of 'port'")
}

// mcode: an IPv4 network with a prefix length or a netmask.
func (p *parser) mcode(t token, s1, s2 string, masklen uint32, q qual) (node, error) {
	n, nlen, ok := atoin(s1)
	if !ok {
		return nil, p.errAt(t, "invalid IPv4 address '%s'", s1)
	}
	n <<= uint(32 - nlen)
	var m uint32
	if s2 != "" {
		mv, mlen, ok := atoin(s2)
		if !ok {
			return nil, p.errAt(t, "invalid IPv4 address '%s'", s2)
		}
		m = mv << uint(32-mlen)
		if n&^m != 0 {
			return nil, p.errAt(t, "non-network bits set in \"%s mask %s\"", s1, s2)
		}
	} else {
		if masklen > 32 {
			return nil, p.errAt(t, "mask length must be <= 32")
		}
		if masklen != 0 {
			m = 0xffffffff << (32 - masklen)
		}
		if n&^m != 0 {
			return nil, p.errAt(t, "non-network bits set in \"%s/%d\"", s1, masklen)
		}
	}
	if q.addr != qaNet {
		return nil, p.errAt(t, "Mask syntax for networks only")
	}
	return p.genHost(t, n, m, q)
}

// mcode6: an IPv6 address, with a prefix length for a network.
func (p *parser) mcode6(t token, masklen uint32, q qual) (node, error) {
	a, err := netip.ParseAddr(t.text)
	if err != nil {
		return nil, p.errAt(t, "invalid ip6 address %s", t.text)
	}
	if masklen > 128 {
		return nil, p.errAt(t, "mask length must be <= 128")
	}
	var mask [16]byte
	for i := 0; i < int(masklen); i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	addr := a.As16()
	for i := range addr {
		if addr[i]&^mask[i] != 0 {
			return nil, p.errAt(t, "non-network bits set in \"%s/%d\"", t.text, masklen)
		}
	}
	switch q.addr {
	case qaDefault, qaHost:
		if masklen != 128 {
			return nil, p.errAt(t, "Mask syntax for networks only")
		}
	case qaNet:
	default:
		return nil, p.errAt(t, "invalid qualifier against IPv6 address")
	}
	return p.genHost6(t, addr, mask, q)
}

// ecode: an Ethernet address, valid under "ether host/src/dst" only.
func (p *parser) ecode(t token, q qual) (node, error) {
	if (q.addr == qaHost || q.addr == qaDefault) && q.proto == qpLink {
		if !p.link.ether {
			return nil, p.errAt(t, "ethernet addresses supported only on ethernet/FDDI/token ring/802.11/ATM LANE/Fibre Channel")
		}
		mac, ok := parseMAC(t.text)
		if !ok {
			return nil, p.errAt(t, "invalid ethernet address %s", t.text)
		}
		return genEHost(mac, q.dir)
	}
	if q.addr == qaUndef {
		return nil, p.syntax(t)
	}
	return nil, p.errAt(t, "ethernet address used in non-ether expression")
}

func parseMAC(s string) ([6]byte, bool) {
	var out [6]byte
	var hex string
	switch {
	case strings.ContainsAny(s, ":-") || strings.Count(s, ".") == 5:
		parts := strings.FieldsFunc(s, func(r rune) bool { return r == ':' || r == '-' || r == '.' })
		if len(parts) != 6 {
			return out, false
		}
		for _, x := range parts {
			if len(x) == 1 {
				x = "0" + x
			}
			hex += x
		}
	default:
		hex = strings.ReplaceAll(s, ".", "")
	}
	if len(hex) != 12 {
		return out, false
	}
	for i := range out {
		v, err := strconv.ParseUint(hex[2*i:2*i+2], 16, 8)
		if err != nil {
			return out, false
		}
		out[i] = byte(v)
	}
	return out, true
}

// scode: a name under q: a port or port range name, a protocol name. Host
// and network names would need the resolver, which a capture filter should
// not depend on; they are refused.
func (p *parser) scode(t token, q qual) (node, error) {
	name := t.text
	switch q.addr {
	case qaUndef:
		return nil, p.syntax(t)
	case qaDefault, qaHost, qaNet:
		if q.proto == qpLink {
			return nil, p.unsupported(t, "Ethernet host names (/etc/ethers)")
		}
		return nil, &Error{Expr: p.expr, Pos: t.pos, Unsupported: true,
			Msg: fmt.Sprintf("host and network names are not resolved: use a numeric address instead of %q", name)}
	case qaPort:
		if _, err := p.portProto(t, q); err != nil {
			return nil, err
		}
		port, real, ok := nameToPort(name)
		if !ok {
			return nil, p.errAt(t, "unknown port '%s'", name)
		}
		real, err := p.narrowPortProto(t, q, name, real)
		if err != nil {
			return nil, err
		}
		v := uint32(port)
		return orNode{p.genPort6(v, v, real, q.dir), p.genPort(v, v, real, q.dir)}, nil
	case qaPortrange:
		if _, err := p.portProto(t, q); err != nil {
			return nil, err
		}
		p1, p2, real, ok := nameToPortRange(name)
		if !ok {
			return nil, p.errAt(t, "unknown port in range '%s'", name)
		}
		real, err := p.narrowPortProto(t, q, name, real)
		if err != nil {
			return nil, err
		}
		if p1 > 65535 {
			return nil, p.errAt(t, "illegal port number %d > 65535", p1)
		}
		if p2 > 65535 {
			return nil, p.errAt(t, "illegal port number %d > 65535", p2)
		}
		v1, v2 := uint32(p1), uint32(p2)
		return orNode{p.genPort6(v1, v2, real, q.dir), p.genPort(v1, v2, real, q.dir)}, nil
	case qaProto:
		var v int
		var ok bool
		if q.proto == qpLink {
			v, ok = etherProtoNames[name]
			if !ok {
				return nil, p.errAt(t, "unknown ether proto '%s'", name)
			}
		} else {
			v, ok = ipProtoNames[name]
			if !ok {
				return nil, p.errAt(t, "unknown ip proto '%s'", name)
			}
		}
		return p.genProto(t, uint32(v), q.proto, q.dir)
	case qaGateway:
		return nil, p.unsupported(t, "'gateway'")
	case qaProtochain:
		return nil, p.unsupported(t, "'protochain'")
	}
	return nil, p.syntax(t)
}

// narrowPortProto reconciles "tcp port NAME" with the protocols NAME is
// registered for in /etc/services, as libpcap does.
func (p *parser) narrowPortProto(t token, q qual, name string, real int) (int, error) {
	want := map[qproto]int{qpUDP: ipprotoUDP, qpTCP: ipprotoTCP, qpSCTP: ipprotoSCTP}[q.proto]
	if want == 0 {
		return real, nil
	}
	if real != protoUndef && real != want {
		return 0, p.errAt(t, "port '%s' is %s", name, map[int]string{ipprotoTCP: "tcp", ipprotoUDP: "udp", ipprotoSCTP: "sctp"}[real])
	}
	return want, nil
}

// nameToPort looks a service name up for TCP and UDP (libpcap's
// pcap_nametoport): registered for both with one number, it matches either.
func nameToPort(name string) (port, proto int, ok bool) {
	tp, terr := net.LookupPort("tcp", name)
	up, uerr := net.LookupPort("udp", name)
	switch {
	case terr == nil:
		if uerr == nil && up == tp {
			return tp, protoUndef, true
		}
		return tp, ipprotoTCP, true
	case uerr == nil:
		return up, ipprotoUDP, true
	}
	return 0, 0, false
}

// nameToPortRange reads "N-M" or "name-name", smaller number first.
func nameToPortRange(s string) (p1, p2, proto int, ok bool) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, 0, false
	}
	n1, e1 := strconv.Atoi(a)
	n2, e2 := strconv.Atoi(b)
	if e1 == nil && e2 == nil && n1 >= 0 && n2 >= 0 {
		if n1 > n2 {
			n1, n2 = n2, n1
		}
		return n1, n2, protoUndef, true
	}
	var pr1, pr2 int
	var ok1, ok2 bool
	if n1, pr1, ok1 = nameToPort(a); !ok1 {
		return 0, 0, 0, false
	}
	if n2, pr2, ok2 = nameToPort(b); !ok2 {
		return 0, 0, 0, false
	}
	proto = pr1
	if pr1 != pr2 {
		proto = protoUndef
	}
	if n1 > n2 {
		n1, n2 = n2, n1
	}
	return n1, n2, proto, true
}

var ipProtoNames = map[string]int{
	"ip": 0, "IP": 0, "icmp": 1, "ICMP": 1, "igmp": 2, "IGMP": 2, "tcp": 6, "TCP": 6,
	"egp": 8, "igp": 9, "udp": 17, "UDP": 17, "ipv6": 41, "IPv6": 41, "ipv6-route": 43,
	"ipv6-frag": 44, "rsvp": 46, "gre": 47, "GRE": 47, "esp": 50, "ESP": 50, "ah": 51, "AH": 51,
	"ipv6-icmp": 58, "IPv6-ICMP": 58, "icmp6": 58, "ipv6-nonxt": 59, "ipv6-opts": 60,
	"ospf": 89, "pim": 103, "vrrp": 112, "l2tp": 115, "sctp": 132, "SCTP": 132, "udplite": 136,
}

var etherProtoNames = map[string]int{
	"ip": ethertypeIP, "ip6": ethertypeIPv6, "arp": ethertypeARP, "rarp": ethertypeRARP,
	"loopback": ethertypeLoop, "vlan": ethertype8021Q,
}
