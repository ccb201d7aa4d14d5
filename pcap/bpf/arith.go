package bpf

import "fmt"

// Relations over packet data, libpcap's "arth relop arth":
// "tcp[13] & 2 != 0", "ip[2:2] - 20 < 40", "len > 100". An accessor
// proto[offset:size] reads size octets at offset from the start of that
// protocol's header, and the relation holds only where that header is
// (libpcap gen_load: tcp[...] needs IPv4, TCP and a first fragment).
//
// Operator precedence follows libpcap's grammar: | below & below << >>
// below + - below * /; unary minus above those; % and ^ carry no
// precedence there, so yacc shifts them: they take the operand just
// before them and everything after.

type arith interface{ isArith() }

type aNum struct{ k uint32 }
type aLen struct{}
type aNeg struct{ x arith }
type aBin struct {
	op   uint16 // aluADD ... aluXOR
	l, r arith
}

// aLoad is proto[idx:size].
type aLoad struct {
	base     loadBase // baseAbs: from the link header; baseNet: from off; baseTrans4: IPv4 payload
	off      uint32   // baseNet: where the header starts; baseTrans4: the IPv4 header
	variable bool     // plus the run-time VLAN shift in M[0]
	idx      arith
	size     int
}

func (aNum) isArith()  {}
func (aLen) isArith()  {}
func (aNeg) isArith()  {}
func (aBin) isArith()  {}
func (aLoad) isArith() {}

const baseNet loadBase = 100 // for aLoad only: relative to a header, index may vary

// relNode: cond (the headers the accessors need), then a0 jmp a1; neg
// inverts the comparison, not the conditions.
type relNode struct {
	cond   node
	a0, a1 arith
	jmp    uint16
	neg    bool
}

func (relNode) isNode() {}

// constVal evaluates e when it reads no packet data.
func constVal(e arith) (uint32, bool) {
	switch e := e.(type) {
	case aNum:
		return e.k, true
	case aNeg:
		v, ok := constVal(e.x)
		return -v, ok
	case aBin:
		a, ok1 := constVal(e.l)
		b, ok2 := constVal(e.r)
		if !ok1 || !ok2 {
			return 0, false
		}
		switch e.op {
		case aluADD:
			return a + b, true
		case aluSUB:
			return a - b, true
		case aluMUL:
			return a * b, true
		case aluDIV:
			if b == 0 {
				return 0, false
			}
			return a / b, true
		case aluMOD:
			if b == 0 {
				return 0, false
			}
			return a % b, true
		case aluAND:
			return a & b, true
		case aluOR:
			return a | b, true
		case aluXOR:
			return a ^ b, true
		case aluLSH:
			if b > 31 {
				return 0, false
			}
			return a << b, true
		case aluRSH:
			if b > 31 {
				return 0, false
			}
			return a >> b, true
		}
	}
	return 0, false
}

var relops = map[string]struct {
	jmp uint16
	neg bool
}{
	">": {jmpJGT, false}, ">=": {jmpJGE, false}, "=": {jmpJEQ, false},
	"<=": {jmpJGT, true}, "<": {jmpJGE, true}, "!=": {jmpJEQ, true},
}

var arithOps = map[string]struct {
	op  uint16
	lbp int
}{
	"|": {aluOR, 1}, "&": {aluAND, 2}, "<<": {aluLSH, 3}, ">>": {aluRSH, 3},
	"+": {aluADD, 4}, "-": {aluSUB, 4}, "*": {aluMUL, 5}, "/": {aluDIV, 5},
	"%": {aluMOD, 100}, "^": {aluXOR, 100},
}

const precUnaryMinus = 6

func (p *parser) semanticErr(t token, format string, args ...any) *Error {
	return p.errAt(t, format, args...)
}

// parseRelation: arth relop arth.
func (p *parser) parseRelation() (node, error) {
	var conds []node
	a0, err := p.parseArith(0, &conds)
	if err != nil {
		return nil, err
	}
	t := p.next()
	rop, ok := relops[t.text]
	if t.kind != tkOp || !ok {
		return nil, p.syntax(t)
	}
	a1, err := p.parseArith(0, &conds)
	if err != nil {
		return nil, err
	}
	if x, ok := constVal(a0); ok {
		if y, ok := constVal(a1); ok && len(conds) == 0 {
			var r bool
			switch rop.jmp {
			case jmpJGT:
				r = x > y
			case jmpJGE:
				r = x >= y
			case jmpJEQ:
				r = x == y
			}
			return constNode(r != rop.neg), nil
		}
	}
	var cond node
	for _, c := range conds {
		if cond == nil {
			cond = c
		} else {
			cond = andNode{cond, c}
		}
	}
	return relNode{cond: cond, a0: a0, a1: a1, jmp: rop.jmp, neg: rop.neg}, nil
}

// parseArith parses an arithmetic expression by precedence climbing,
// appending the conditions its accessors need to conds in libpcap's order.
func (p *parser) parseArith(minbp int, conds *[]node) (arith, error) {
	t := p.next()
	if err := p.enter(t); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	var left arith
	switch {
	case t.kind == tkNum:
		left = aNum{t.num}
	case isKW(t, "len"):
		left = aLen{}
	case isOp(t, "-"):
		x, err := p.parseArith(precUnaryMinus, conds)
		if err != nil {
			return nil, err
		}
		left = aNeg{x}
	case isOp(t, "("):
		x, err := p.parseArith(0, conds)
		if err != nil {
			return nil, err
		}
		if c := p.next(); !isOp(c, ")") {
			return nil, p.syntax(c)
		}
		left = x
	case t.kind == tkKW && isOp(p.peek(), "["):
		x, err := p.parseAccessor(t, conds)
		if err != nil {
			return nil, err
		}
		left = x
	default:
		return nil, p.syntax(t)
	}
	for {
		t := p.peek()
		o, ok := arithOps[t.text]
		if t.kind != tkOp || !ok || o.lbp <= minbp {
			return left, nil
		}
		p.next()
		rbp := o.lbp
		if o.lbp == 100 {
			rbp = 0 // % and ^: everything after them
		}
		right, err := p.parseArith(rbp, conds)
		if err != nil {
			return nil, err
		}
		if k, ok := right.(aNum); ok {
			switch {
			case o.op == aluDIV && k.k == 0:
				return nil, p.semanticErr(t, "division by zero")
			case o.op == aluMOD && k.k == 0:
				return nil, p.semanticErr(t, "modulus by zero")
			case (o.op == aluLSH || o.op == aluRSH) && k.k > 31:
				return nil, p.semanticErr(t, "shift by more than 31 bits")
			}
		}
		left = aBin{o.op, left, right}
	}
}

// parseAccessor: proto '[' arth [':' size] ']' after the protocol name t.
func (p *parser) parseAccessor(t token, conds *[]node) (arith, error) {
	p.next() // '['
	var idxConds []node
	idx, err := p.parseArith(0, &idxConds)
	if err != nil {
		return nil, err
	}
	size := 1
	if isOp(p.peek(), ":") {
		p.next()
		n := p.next()
		if n.kind != tkNum {
			return nil, p.syntax(n)
		}
		if n.num != 1 && n.num != 2 && n.num != 4 {
			return nil, p.semanticErr(n, "data size must be 1, 2, or 4")
		}
		size = int(n.num)
	}
	if c := p.next(); !isOp(c, "]") {
		return nil, p.syntax(c)
	}
	net := uint32(p.link.netOff + p.st.shift)
	ld := aLoad{off: net, variable: p.st.variable, idx: idx, size: size}
	proto, ok := pnames[t.text]
	if !ok {
		return nil, p.unsupported(t, fmt.Sprintf("%q in packet data access", t.text))
	}
	switch proto {
	case qpLink:
		ld.base, ld.off, ld.variable = baseAbs, 0, false
		*conds = append(*conds, idxConds...)
	case qpIP, qpARP, qpRARP, qpIP6:
		ld.base = baseNet
		et := map[qproto]uint32{qpIP: ethertypeIP, qpARP: ethertypeARP, qpRARP: ethertypeRARP, qpIP6: ethertypeIPv6}[proto]
		lt, err := p.genLinktype(t, et)
		if err != nil {
			return nil, err
		}
		*conds = append(append(*conds, idxConds...), lt)
	case qpICMP6:
		ld.base, ld.off = baseNet, net+40
		*conds = append(append(*conds, idxConds...),
			andNode{p.mustLinktype(ethertypeIPv6), cmpNode{ld: p.loadNet(6, 1), jmp: jmpJEQ, k: ipprotoICMPv6}})
	case qpTCP, qpUDP, qpSCTP, qpICMP, qpIGMP, qpIGRP, qpPIM, qpVRRP, qpCARP:
		ld.base = baseTrans4
		pa, err := p.protoAbbrev(t, proto)
		if err != nil {
			return nil, err
		}
		frag := notNode{cmpNode{ld: p.loadNet(6, 2), jmp: jmpJSET, k: 0x1fff}}
		*conds = append(append(append(*conds, p.mustLinktype(ethertypeIP)), idxConds...), andNode{pa, frag})
	default:
		return nil, p.unsupported(t, fmt.Sprintf("%q in packet data access", t.text))
	}
	// A constant offset is loaded at a constant 32-bit position. Linux
	// reads positions of 2^31 and more (negative as int32: SKF_AD_OFF,
	// SKF_NET_OFF, SKF_LL_OFF) as ancillary data, not packet octets, so
	// "ether[-1]" would test the wrong thing in the kernel and wrap in
	// user space: refused, as no packet has such an offset.
	if k, ok := constVal(idx); ok {
		end := uint64(k) + uint64(ld.off) + uint64(size)
		if ld.base == baseTrans4 {
			end += 60 // the IPv4 header, up to 60 octets, in between
		}
		if end > 1<<31 {
			return nil, p.semanticErr(t, "packet data offset %d out of range", int32(k))
		}
	}
	return ld, nil
}
