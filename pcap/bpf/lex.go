package bpf

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
)

// The lexer follows libpcap's scanner.l: at each position the longest match
// wins, and on a tie the rule listed first (keywords before numbers before
// addresses before identifiers). So "ip6" is a keyword, "10.0.0.1" an IPv4
// address, "80-90" an identifier (a port range), "tcpdump" an identifier.

type tokKind int

const (
	tkEOF  tokKind = iota
	tkNum          // number: decimal, 0x hex, 0 octal
	tkHID          // dotted IPv4 address, possibly short: 10.1
	tkHID6         // IPv6 address
	tkEID          // Ethernet (MAC) address
	tkAID          // $xx (ARCnet)
	tkID           // identifier: host/port/protocol name, port range
	tkKW           // keyword (text in tok.text)
	tkAnd          // and, &&
	tkOr           // or, ||
	tkNot          // not, !
	tkOp           // punctuation: ( ) [ ] : + - * / % & | ^ < > = >= <= != << >>
)

type token struct {
	kind tokKind
	text string // keyword, identifier, address or operator text
	num  uint32 // tkNum
	pos  int
}

func (t token) String() string {
	switch t.kind {
	case tkEOF:
		return "end of expression"
	case tkNum:
		return fmt.Sprintf("number %d", t.num)
	}
	return fmt.Sprintf("%q", t.text)
}

// keywords are libpcap's reserved words. Each maps to its canonical spelling.
var keywords = map[string]string{}

func init() {
	for _, group := range []string{
		"dst src host net mask port portrange proto protochain gateway less greater byte broadcast multicast",
		"link ether ppp slip fddi tr wlan arp rarp ip sctp tcp udp icmp igmp igrp pim vrrp carp radio ip6 icmp6 ah esp",
		"atalk aarp decnet lat sca moprc mopdl iso esis es-is isis is-is l1 l2 iih lsp snp csnp psnp clnp stp ipx netbeui",
		"type subtype direction dir address1 addr1 address2 addr2 address3 addr3 address4 addr4 ra ta",
		"len length inbound outbound ifindex vlan mpls pppoed pppoes geneve vxlan batadv",
		"lane llc metac bcc oam oamf4 oamf4ec oamf4sc sc ilmic vpi vci connectmsg metaconnect",
		"on ifname rset ruleset rnr rulenum srnr subrulenum reason action",
		"fisu lssu msu hfisu hlssu hmsu sio opc dpc sls hsio hopc hdpc hsls",
	} {
		for _, k := range strings.Fields(group) {
			keywords[k] = k
		}
	}
	for alias, k := range map[string]string{
		"ether": "link", "ppp": "link", "slip": "link", "fddi": "link", "tr": "link", "wlan": "link",
		"es-is": "esis", "is-is": "isis", "length": "len", "direction": "dir",
		"address1": "addr1", "address2": "addr2", "address3": "addr3", "address4": "addr4",
		"ifname": "on", "ruleset": "rset", "rulenum": "rnr", "subrulenum": "srnr",
	} {
		keywords[alias] = k
	}
}

// namedNums are the words libpcap's scanner turns into numbers, for byte
// offsets and flag values in expressions such as tcp[tcpflags].
var namedNums = map[string]uint32{
	"icmptype": 0, "icmpcode": 1,
	"icmp-echoreply": 0, "icmp-unreach": 3, "icmp-sourcequench": 4, "icmp-redirect": 5,
	"icmp-echo": 8, "icmp-routeradvert": 9, "icmp-routersolicit": 10, "icmp-timxceed": 11,
	"icmp-paramprob": 12, "icmp-tstamp": 13, "icmp-tstampreply": 14, "icmp-ireq": 15,
	"icmp-ireqreply": 16, "icmp-maskreq": 17, "icmp-maskreply": 18,
	"icmp6type": 0, "icmp6code": 1,
	"icmp6-destinationunreach": 1, "icmp6-packettoobig": 2, "icmp6-timeexceeded": 3,
	"icmp6-parameterproblem": 4, "icmp6-echo": 128, "icmp6-echoreply": 129,
	"icmp6-multicastlistenerquery": 130, "icmp6-multicastlistenerreportv1": 131,
	"icmp6-multicastlistenerdone": 132, "icmp6-routersolicit": 133, "icmp6-routeradvert": 134,
	"icmp6-neighborsolicit": 135, "icmp6-neighboradvert": 136, "icmp6-redirect": 137,
	"tcpflags": 13, "tcp-fin": 0x01, "tcp-syn": 0x02, "tcp-rst": 0x04, "tcp-push": 0x08,
	"tcp-ack": 0x10, "tcp-urg": 0x20, "tcp-ece": 0x40, "tcp-cwr": 0x80,
}

var (
	reMAC   = regexp.MustCompile(`^(?:` + mac + `)`)
	reNum   = regexp.MustCompile(`^(?:0[Xx][0-9A-Fa-f]+|[0-9]+)`)
	reHID   = regexp.MustCompile(`^(?:` + num + `\.` + num + `\.` + num + `\.` + num + `|` + num + `\.` + num + `\.` + num + `|` + num + `\.` + num + `)`)
	reBogus = regexp.MustCompile(`^[0-9A-Fa-f][0-9A-Fa-f]?:+(?:[0-9A-Fa-f][0-9A-Fa-f]?:+)+`)
	reID    = regexp.MustCompile(`^[A-Za-z0-9](?:[-_.A-Za-z0-9]*[.A-Za-z0-9])?`)
	reEsc   = regexp.MustCompile(`^\\[^ !()\n\t]+`)
	reAID   = regexp.MustCompile(`^\$[0-9A-Fa-f][0-9A-Fa-f]?`)
	reV6Run = regexp.MustCompile(`^[0-9A-Fa-f:.]+`)
)

const (
	num = `(?:0[Xx][0-9A-Fa-f]+|[0-9]+)`
	b1  = `[0-9A-Fa-f][0-9A-Fa-f]?`
	b2  = `[0-9A-Fa-f]{4}`
	mac = b1 + `:` + b1 + `:` + b1 + `:` + b1 + `:` + b1 + `:` + b1 + `|` +
		b1 + `-` + b1 + `-` + b1 + `-` + b1 + `-` + b1 + `-` + b1 + `|` +
		b1 + `\.` + b1 + `\.` + b1 + `\.` + b1 + `\.` + b1 + `\.` + b1 + `|` +
		b2 + `\.` + b2 + `\.` + b2 + `|` + b2 + b2 + b2
)

func init() {
	for _, re := range []*regexp.Regexp{reMAC, reNum, reHID, reBogus, reID, reEsc, reAID, reV6Run} {
		re.Longest()
	}
}

// v6Len returns the length of the longest prefix of s that is an IPv6
// address (libpcap's V6 rule), 0 when there is none.
func v6Len(s string) int {
	// 45: the longest IPv6 address text, six groups and an IPv4 tail.
	run := reV6Run.FindString(s[:min(len(s), 45)])
	if !strings.Contains(run, ":") {
		return 0
	}
	for n := len(run); n > 1; n-- {
		if !strings.Contains(run[:n], ":") {
			break
		}
		if a, err := netip.ParseAddr(run[:n]); err == nil && a.Is6() && a.Zone() == "" {
			return n
		}
	}
	return 0
}

// maxWord bounds a word: a host name is at most 253 characters.
const maxWord = 256

var twoCharOps = []string{">=", "<=", "!=", "==", "<<", ">>", "&&", "||"}

const oneCharOps = "+-*/%:[]!<>()&|^="

// lex splits expr into tokens. A character that starts no token is an error
// at its position.
func lex(expr string) ([]token, *Error) {
	var toks []token
	i := 0
	for {
		for i < len(expr) && strings.IndexByte(" \r\n\t", expr[i]) >= 0 {
			i++
		}
		if i == len(expr) {
			return append(toks, token{kind: tkEOF, pos: i}), nil
		}
		s := expr[i:]
		op := ""
		for _, o := range twoCharOps {
			if strings.HasPrefix(s, o) {
				op = o
				break
			}
		}
		if op == "" && strings.IndexByte(oneCharOps, s[0]) >= 0 {
			op = s[:1]
		}
		if op == ":" && v6Len(s) > 0 {
			op = "" // "::1": an IPv6 address is the longer match
		}
		if op != "" {
			t := token{kind: tkOp, text: op, pos: i}
			switch op {
			case "&&":
				t.kind = tkAnd
			case "||":
				t.kind = tkOr
			case "!":
				t.kind = tkNot
			case "==":
				t.text = "="
			}
			toks = append(toks, t)
			i += len(op)
			continue
		}
		t, n, err := lexWord(s)
		if err != nil {
			err.Expr, err.Pos = expr, i
			return nil, err
		}
		t.pos = i
		toks = append(toks, t)
		i += n
	}
}

// lexWord reads one word token from the start of s, applying flex's
// longest-match-then-first-rule choice across libpcap's word rules.
func lexWord(s string) (token, int, *Error) {
	// No word is longer than maxWord; looking no farther keeps lexing
	// linear in the length of the expression.
	if len(s) > maxWord {
		s = s[:maxWord]
	}
	type cand struct {
		n    int
		kind tokKind
	}
	best := cand{}
	try := func(n int, k tokKind) {
		if n > best.n { // strictly longer: earlier rules win ties
			best = cand{n, k}
		}
	}
	// Keywords come first in the scanner; the longest keyword that is a
	// prefix of s competes with the other rules.
	if n := len(reID.FindString(s)); n > 0 {
		w := s[:n]
		for k := n; k > 0; k-- {
			if _, ok := keywords[w[:k]]; ok {
				try(k, tkKW)
				break
			}
		}
	}
	try(len(reAID.FindString(s)), tkAID)
	try(len(reMAC.FindString(s)), tkEID)
	try(len(reNum.FindString(s)), tkNum)
	try(len(reHID.FindString(s)), tkHID)
	try(v6Len(s), tkHID6)
	if n := len(reBogus.FindString(s)); n > best.n {
		return token{}, 0, &Error{Msg: fmt.Sprintf("bogus ethernet address %s", clip(s[:n], 40))}
	}
	if n := len(reID.FindString(s)); n > 0 {
		if _, ok := namedNums[s[:n]]; ok && n > best.n {
			best = cand{n, tkNum}
		}
	}
	try(len(reID.FindString(s)), tkID)
	if best.n == 0 {
		if m := reEsc.FindString(s); m != "" {
			return token{kind: tkID, text: m[1:]}, len(m), nil
		}
		return token{}, 0, &Error{Msg: fmt.Sprintf("illegal character %q", s[:1])}
	}
	if best.n == maxWord {
		return token{}, 0, &Error{Msg: fmt.Sprintf("word longer than %d characters", maxWord)}
	}
	w := s[:best.n]
	t := token{kind: best.kind, text: w}
	switch best.kind {
	case tkKW:
		t.text = keywords[w]
		switch t.text {
		case "and":
			t.kind = tkAnd
		case "or":
			t.kind = tkOr
		case "not":
			t.kind = tkNot
		}
	case tkNum:
		if v, ok := namedNums[w]; ok {
			t.num = v
			break
		}
		v, err := stou(w)
		if err != nil {
			return token{}, 0, &Error{Msg: err.Error()}
		}
		t.num = v
	}
	return t, best.n, nil
}

// "and", "or" and "not" are in the keyword table so that they win over
// identifiers.
func init() {
	keywords["and"] = "and"
	keywords["or"] = "or"
	keywords["not"] = "not"
}

// stou converts a number as libpcap does: 0x hex, leading 0 octal, else
// decimal, refusing anything that does not fit 32 bits.
func stou(s string) (uint32, error) {
	base, digits := uint64(10), s
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, digits = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, s[1:]
	}
	var v uint64
	for _, c := range []byte(digits) {
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		}
		if d >= base {
			return 0, fmt.Errorf("number %s contains non-octal digit", s)
		}
		v = v*base + d
		if v > 0xffffffff {
			return 0, fmt.Errorf("number %s overflows 32 bits", s)
		}
	}
	return uint32(v), nil
}

// atoin parses a possibly short dotted IPv4 address as libpcap's
// __pcap_atoin: "10.1" is 10.1 in the top 16 bits, with length 16.
func atoin(s string) (v uint32, bits int, ok bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return 0, 0, false
	}
	for _, p := range parts {
		if p == "" {
			return 0, 0, false
		}
		n := 0
		for _, c := range []byte(p) {
			if c < '0' || c > '9' {
				return 0, 0, false
			}
			n = n*10 + int(c-'0')
			if n > 255 {
				return 0, 0, false
			}
		}
		v = v<<8 | uint32(n)
	}
	return v, 8 * len(parts), true
}
