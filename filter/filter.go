// Package filter compiles display filters — `rdmap.opcode == "RDMA Read
// Request" && ddp.stag == 0x1234` — over the shared field table and
// evaluates them on records without allocating.
//
// It is a small own parser rather than github.com/expr-lang/expr: field
// names are dotted protocol names, a bare field tests presence (as in
// Wireshark), evaluation must not allocate per PDU, and errors must point at
// the column of the mistake. Grammar:
//
//	expr    = and { ("||" | "or") and }
//	and     = unary { ("&&" | "and") unary }
//	unary   = ("!" | "not") unary | "(" expr ")" | test
//	test    = FIELD [ op literal ]
//	op      = "==" | "!=" | "<" | "<=" | ">" | ">=" | "contains"
//	literal = number (decimal or 0x-hex) | "string" | true | false
//	        | seconds (1.5, for a time) | address or prefix (10.0.0.1, fe80::1, 10.0.0.0/8)
package filter

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/iwkit/iwkit/decode"
)

// Getter reads one field of a record.
type Getter[R any] func(r R) (decode.Value, bool)

// Resolver finds the getter and kind of a field by name.
type Resolver[R any] func(name string) (Getter[R], decode.FieldKind, bool)

// Nth reads occurrence i (from 0) of a field a record may carry more than
// once (each member of an SMB2 compound has its smb2.command); false past
// the last.
type Nth[R any] func(r R, i int) (decode.Value, bool)

// Multi gives the Nth of a field that may occur more than once, nil for a
// field that occurs at most once.
type Multi[R any] func(name string) Nth[R]

// Filter is a compiled display filter.
type Filter[R any] struct {
	root node[R]
	src  string
}

// Match reports whether the record passes the filter.
func (f *Filter[R]) Match(r R) bool { return f.root.eval(r) }

// String returns the source text.
func (f *Filter[R]) String() string { return f.src }

// Error is a compile error with the 0-based column it points at.
type Error struct {
	Src    string
	Column int
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("filter: column %d: %s\n  %s\n  %s^", e.Column+1, e.Msg, e.Src, strings.Repeat(" ", e.Column))
}

type node[R any] interface{ eval(r R) bool }

type orNode[R any] struct{ a, b node[R] }
type andNode[R any] struct{ a, b node[R] }
type notNode[R any] struct{ a node[R] }
type presentNode[R any] struct {
	get Getter[R]
	nth Nth[R] // set: any occurrence
}

func (n orNode[R]) eval(r R) bool  { return n.a.eval(r) || n.b.eval(r) }
func (n andNode[R]) eval(r R) bool { return n.a.eval(r) && n.b.eval(r) }
func (n notNode[R]) eval(r R) bool { return !n.a.eval(r) }
func (n presentNode[R]) eval(r R) bool {
	if n.nth != nil {
		_, ok := n.nth(r, 0)
		return ok
	}
	_, ok := n.get(r)
	return ok
}

type op uint8

const (
	opEq op = iota
	opNe
	opLt
	opLe
	opGt
	opGe
	opContains
)

var opNames = map[string]op{"==": opEq, "!=": opNe, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe, "contains": opContains}

// cmpNode compares a field with a literal. A record without the field
// never matches, not even "!=" (Wireshark's rule): write !(f == x) for
// "absent or different".
type cmpNode[R any] struct {
	get   Getter[R]
	op    op
	num   uint64
	isNum bool
	str   string
	raw   []byte       // for contains on bytes
	pfx   netip.Prefix // an address field's literal (an address: its /32 or /128)
	// nth, for a field that may occur more than once: as in Wireshark, the
	// comparison holds when any occurrence satisfies it, but != holds
	// when every occurrence differs (none equals).
	nth Nth[R]
}

func cmpUint(a, b uint64, o op) bool {
	switch o {
	case opEq:
		return a == b
	case opNe:
		return a != b
	case opLt:
		return a < b
	case opLe:
		return a <= b
	case opGt:
		return a > b
	case opGe:
		return a >= b
	}
	return false
}

func cmpString(a, b string, o op) bool {
	switch o {
	case opEq:
		return a == b
	case opNe:
		return a != b
	case opContains:
		return strings.Contains(a, b)
	}
	return cmpUint(uint64(strings.Compare(a, b)+1), 1, o)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (n *cmpNode[R]) eval(r R) bool {
	if n.nth == nil {
		v, ok := n.get(r)
		return ok && n.holds(v)
	}
	v, ok := n.nth(r, 0)
	if !ok {
		return false
	}
	for i := 1; ok; i++ {
		if h := n.holds(v); h != (n.op == opNe) {
			return h
		}
		v, ok = n.nth(r, i)
	}
	return n.op == opNe
}

// holds compares one occurrence.
func (n *cmpNode[R]) holds(v decode.Value) bool {
	switch v.Kind {
	case decode.KindBool, decode.KindUint:
		return cmpUint(v.U, n.num, n.op)
	case decode.KindEnum:
		if n.isNum {
			return cmpUint(v.U, n.num, n.op)
		}
		return cmpString(v.S, n.str, n.op)
	case decode.KindString:
		return cmpString(v.S, n.str, n.op)
	case decode.KindTime:
		// Signed: a frame before the first (a capture out of time order)
		// has a negative relative time.
		a, b := int64(v.U), int64(n.num)
		return cmpUint(uint64(cmpInt(a, b)+1), 1, n.op)
	case decode.KindAddr:
		in := n.pfx.Contains(decode.AddrOf(v))
		return in == (n.op == opEq)
	case decode.KindBytes:
		switch n.op {
		case opContains:
			return bytes.Contains(v.B, n.raw)
		case opEq:
			return bytes.Equal(v.B, n.raw)
		case opNe:
			return !bytes.Equal(v.B, n.raw)
		}
	}
	return false
}

// Option changes how Compile reads field names.
type Option func(*options)

type options struct {
	either func(name string) (a, b string, ok bool)
}

// Either names the fields that stand for either of two others, as
// Wireshark's ip.addr (ip.src or ip.dst) and tcp.port: `ip.addr == X`
// is `ip.src == X || ip.dst == X`, a bare `ip.addr` tests either's
// presence, and `ip.addr != X` is `ip.src != X && ip.dst != X` (neither
// is X: Wireshark's !=, "all not equal").
func Either(f func(name string) (a, b string, ok bool)) Option {
	return func(o *options) { o.either = f }
}

// Compile parses src against the fields resolve knows.
func Compile[R any](src string, resolve Resolver[R], opts ...Option) (*Filter[R], error) {
	return CompileMulti(src, resolve, nil, opts...)
}

// CompileMulti is Compile where the fields multi names may occur more
// than once in a record (see cmpNode.nth).
func CompileMulti[R any](src string, resolve Resolver[R], multi Multi[R], opts ...Option) (*Filter[R], error) {
	p := &parser[R]{src: src, resolve: resolve, multi: multi}
	for _, o := range opts {
		o(&p.opts)
	}
	p.next()
	if p.tok.kind == tEOF {
		return nil, p.errAt(0, "empty filter")
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, p.errAt(p.tok.pos, fmt.Sprintf("unexpected %q after a complete expression (missing && or ||?)", p.tok.text))
	}
	return &Filter[R]{root: n, src: src}, nil
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tNumber
	tString
	tOp
	tAnd
	tOr
	tNot
	tLParen
	tRParen
	tBad
)

type token struct {
	kind tokKind
	text string
	pos  int
}

type parser[R any] struct {
	src     string
	pos     int
	tok     token
	resolve Resolver[R]
	opts    options
	multi   Multi[R]
}

func (p *parser[R]) errAt(col int, msg string) error {
	return &Error{Src: p.src, Column: col, Msg: msg}
}

func isIdent(c byte, first bool) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && (c == '.' || c >= '0' && c <= '9')
}

func (p *parser[R]) next() {
	s := p.src
	for p.pos < len(s) && (s[p.pos] == ' ' || s[p.pos] == '\t' || s[p.pos] == '\n') {
		p.pos++
	}
	start := p.pos
	if p.pos >= len(s) {
		p.tok = token{tEOF, "", start}
		return
	}
	c := s[p.pos]
	two := ""
	if p.pos+1 < len(s) {
		two = s[p.pos : p.pos+2]
	}
	switch {
	case two == "&&":
		p.pos += 2
		p.tok = token{tAnd, two, start}
	case two == "||":
		p.pos += 2
		p.tok = token{tOr, two, start}
	case two == "==" || two == "!=" || two == "<=" || two == ">=":
		p.pos += 2
		p.tok = token{tOp, two, start}
	case c == '<' || c == '>':
		p.pos++
		p.tok = token{tOp, s[start:p.pos], start}
	case c == '!':
		p.pos++
		p.tok = token{tNot, "!", start}
	case c == '(':
		p.pos++
		p.tok = token{tLParen, "(", start}
	case c == ')':
		p.pos++
		p.tok = token{tRParen, ")", start}
	case c == '"':
		p.pos++
		var b strings.Builder
		for p.pos < len(s) && s[p.pos] != '"' {
			if s[p.pos] == '\\' && p.pos+1 < len(s) {
				p.pos++
			}
			b.WriteByte(s[p.pos])
			p.pos++
		}
		if p.pos >= len(s) {
			p.tok = token{tBad, "unterminated string", start}
			return
		}
		p.pos++
		p.tok = token{tString, b.String(), start}
	case c >= '0' && c <= '9':
		for p.pos < len(s) && (isIdent(s[p.pos], false) || s[p.pos] == ':') {
			p.pos++
		}
		p.tok = token{tNumber, s[start:p.pos], start}
	case isIdent(c, true):
		for p.pos < len(s) && isIdent(s[p.pos], false) {
			p.pos++
		}
		w := s[start:p.pos]
		switch w {
		case "and":
			p.tok = token{tAnd, w, start}
		case "or":
			p.tok = token{tOr, w, start}
		case "not":
			p.tok = token{tNot, w, start}
		case "contains", "eq", "ne", "lt", "le", "gt", "ge":
			alias := map[string]string{"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
			if a, ok := alias[w]; ok {
				w = a
			}
			p.tok = token{tOp, w, start}
		default:
			p.tok = token{tIdent, w, start}
		}
	default:
		p.pos++
		p.tok = token{tBad, fmt.Sprintf("unexpected character %q", c), start}
	}
}

func (p *parser[R]) expr() (node[R], error) {
	a, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tOr {
		p.next()
		b, err := p.and()
		if err != nil {
			return nil, err
		}
		a = orNode[R]{a, b}
	}
	return a, nil
}

func (p *parser[R]) and() (node[R], error) {
	a, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tAnd {
		p.next()
		b, err := p.unary()
		if err != nil {
			return nil, err
		}
		a = andNode[R]{a, b}
	}
	return a, nil
}

func (p *parser[R]) unary() (node[R], error) {
	switch p.tok.kind {
	case tNot:
		p.next()
		a, err := p.unary()
		if err != nil {
			return nil, err
		}
		return notNode[R]{a}, nil
	case tLParen:
		open := p.tok.pos
		p.next()
		a, err := p.expr()
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tRParen {
			return nil, p.errAt(p.tok.pos, fmt.Sprintf("missing ) to close the ( at column %d", open+1))
		}
		p.next()
		return a, nil
	case tIdent:
		return p.test()
	case tBad:
		return nil, p.errAt(p.tok.pos, p.tok.text)
	case tEOF:
		return nil, p.errAt(p.tok.pos, "expression ends where a field was expected")
	}
	return nil, p.errAt(p.tok.pos, fmt.Sprintf("expected a field name, found %q", p.tok.text))
}

func (p *parser[R]) test() (node[R], error) {
	name, at := p.tok.text, p.tok.pos
	if _, _, ok := p.resolve(name); !ok && p.opts.either != nil {
		if a, b, ok := p.opts.either(name); ok {
			return p.eitherTest(name, a, b)
		}
	}
	get, kind, ok := p.resolve(name)
	if !ok {
		return nil, p.errAt(at, fmt.Sprintf("unknown field %q", name))
	}
	p.next()
	var nth Nth[R]
	if p.multi != nil {
		nth = p.multi(name)
	}
	return p.compare(name, get, kind, nth)
}

// eitherTest compiles a test of a field that stands for two (Either).
func (p *parser[R]) eitherTest(name, a, b string) (node[R], error) {
	ga, ka, oka := p.resolve(a)
	gb, _, okb := p.resolve(b)
	if !oka || !okb {
		return nil, p.errAt(p.tok.pos, fmt.Sprintf("field %q stands for %s and %s, which are unknown", name, a, b))
	}
	p.next()
	if p.tok.kind != tOp {
		return orNode[R]{presentNode[R]{get: ga}, presentNode[R]{get: gb}}, nil
	}
	// Compile the comparison once, then use it on both fields.
	na, err := p.compare(name, ga, ka, nil)
	if err != nil {
		return nil, err
	}
	ca := na.(*cmpNode[R])
	cb := *ca
	cb.get = gb
	if ca.op == opNe {
		return andNode[R]{ca, &cb}, nil
	}
	return orNode[R]{ca, &cb}, nil
}

// compare compiles what follows a field name: nothing (presence) or a
// comparison with a literal.
func (p *parser[R]) compare(name string, get Getter[R], kind decode.FieldKind, nth Nth[R]) (node[R], error) {
	if p.tok.kind != tOp {
		return presentNode[R]{get, nth}, nil
	}
	o, opAt := opNames[p.tok.text], p.tok.pos
	if kind == decode.KindAddr {
		p.nextWord() // an address: 10.0.0.1, fe80::1, 10.0.0.0/8
	} else {
		p.next()
	}
	lit := p.tok
	n := &cmpNode[R]{get: get, op: o, nth: nth}
	switch {
	case kind == decode.KindAddr && (lit.kind == tNumber || lit.kind == tString):
		if o != opEq && o != opNe {
			return nil, p.errAt(opAt, fmt.Sprintf("%s is an address: only == and != apply", name))
		}
		pfx, err := parseAddr(lit.text)
		if err != nil {
			return nil, p.errAt(lit.pos, fmt.Sprintf("bad address %q (write 10.0.0.1, fe80::1 or a prefix 10.0.0.0/8)", lit.text))
		}
		n.pfx = pfx
		p.next()
		return n, nil
	case kind == decode.KindTime && (lit.kind == tNumber || lit.kind == tString):
		if o == opContains {
			return nil, p.errAt(opAt, fmt.Sprintf("contains needs a string or bytes field; %s is a time", name))
		}
		ns, err := parseSeconds(lit.text)
		if err != nil {
			return nil, p.errAt(lit.pos, fmt.Sprintf("bad time %q (seconds, as 1.5 or 0.000123)", lit.text))
		}
		n.num, n.isNum = uint64(ns), true
		p.next()
		return n, nil
	}
	switch lit.kind {
	case tNumber:
		if kind == decode.KindBytes {
			raw, ok := parseHexBytes(lit.text)
			if !ok {
				return nil, p.errAt(lit.pos, fmt.Sprintf("bad octet string %q (write 0x2a2b or 2a:2b)", lit.text))
			}
			n.raw = raw
			break
		}
		if kind == decode.KindString {
			return nil, p.errAt(lit.pos, fmt.Sprintf("%s is a string field; compare it with a \"string\"", name))
		}
		v, err := parseNumber(lit.text)
		if err != nil {
			return nil, p.errAt(lit.pos, fmt.Sprintf("bad number %q", lit.text))
		}
		n.num, n.isNum = v, true
	case tString:
		switch kind {
		case decode.KindUint, decode.KindBool:
			return nil, p.errAt(lit.pos, fmt.Sprintf("%s is a number; compare it with a number, not %q", name, lit.text))
		case decode.KindBytes:
			n.raw = []byte(lit.text)
		}
		n.str = lit.text
	case tIdent:
		switch lit.text {
		case "true", "false":
			if kind != decode.KindBool {
				return nil, p.errAt(lit.pos, fmt.Sprintf("%s is not a boolean field", name))
			}
			n.num, n.isNum = 0, true
			if lit.text == "true" {
				n.num = 1
			}
		default:
			return nil, p.errAt(lit.pos, fmt.Sprintf("expected a value after %s, found the name %q (quote strings)", p.src[opAt:opAt+len(opNamesRev(o))], lit.text))
		}
	case tBad:
		return nil, p.errAt(lit.pos, lit.text)
	default:
		return nil, p.errAt(lit.pos, fmt.Sprintf("expected a value after %q", opNamesRev(o)))
	}
	if o == opContains && kind != decode.KindString && kind != decode.KindBytes && !(kind == decode.KindEnum && !n.isNum) {
		return nil, p.errAt(opAt, fmt.Sprintf("contains needs a string or bytes field; %s is a %s", name, kind))
	}
	if o >= opLt && o <= opGe && kind == decode.KindBytes {
		return nil, p.errAt(opAt, fmt.Sprintf("%s is bytes: only ==, != and contains apply", name))
	}
	p.next()
	return n, nil
}

// nextWord reads the next token as an address literal: a quoted string,
// or the characters up to a space, a parenthesis or an operator.
func (p *parser[R]) nextWord() {
	s := p.src
	for p.pos < len(s) && (s[p.pos] == ' ' || s[p.pos] == '\t' || s[p.pos] == '\n') {
		p.pos++
	}
	start := p.pos
	if p.pos >= len(s) || s[p.pos] == '"' {
		p.next()
		return
	}
	for p.pos < len(s) && !strings.ContainsRune(" \t\n()&|!=<>\"", rune(s[p.pos])) {
		p.pos++
	}
	if p.pos == start {
		p.next()
		return
	}
	p.tok = token{tNumber, s[start:p.pos], start}
}

// parseAddr reads an address (its one-address prefix) or a prefix.
func parseAddr(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		pfx, err := netip.ParsePrefix(s)
		return pfx.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// parseSeconds reads seconds with up to 9 decimals ("1.5", "0.000123",
// "2") as nanoseconds, exactly (no float rounding).
func parseSeconds(s string) (int64, error) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || len(frac) > 9 {
		return 0, fmt.Errorf("bad seconds %q", s)
	}
	var w uint64
	var err error
	if whole != "" {
		if w, err = strconv.ParseUint(whole, 10, 64); err != nil || w > 9e9 {
			return 0, fmt.Errorf("bad seconds %q", s)
		}
	}
	var f uint64
	if frac != "" {
		if f, err = strconv.ParseUint(frac, 10, 64); err != nil {
			return 0, fmt.Errorf("bad seconds %q", s)
		}
		for i := len(frac); i < 9; i++ {
			f *= 10
		}
	}
	return int64(w*1e9 + f), nil
}

func opNamesRev(o op) string {
	for k, v := range opNames {
		if v == o {
			return k
		}
	}
	return "?"
}

func parseNumber(s string) (uint64, error) {
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
		return strconv.ParseUint(s[2:], 16, 64)
	}
	return strconv.ParseUint(s, 10, 64)
}

// parseHexBytes reads aa:bb:cc or 0xaabbcc.
func parseHexBytes(s string) ([]byte, bool) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	s = strings.ReplaceAll(s, ":", "")
	if len(s)%2 != 0 {
		return nil, false
	}
	out := make([]byte, len(s)/2)
	for i := range out {
		v, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			return nil, false
		}
		out[i] = byte(v)
	}
	return out, true
}

// PDUResolver resolves the decode field table for *decode.PDU records.
func PDUResolver(name string) (Getter[*decode.PDU], decode.FieldKind, bool) {
	f, ok := decode.FieldByName(name)
	if !ok {
		return nil, 0, false
	}
	return f.Get, f.Kind, true
}
