// Package bpf compiles capture filters: expressions in pcap-filter(7)
// syntax compiled in Go to classic BPF, with no libpcap. The compiler
// covers the subset people use to pick traffic out of a link and gives the
// same verdict on every packet as the program libpcap generates for the
// same expression, down to its quirks: IPv4 ports are found through the header length (options
// skipped), non-first fragments never match a port, IPv6 is looked at
// through the fixed header only (plus one fragment header for tcp/udp),
// and "vlan" shifts the offsets of everything written after it.
//
// Covered: [src|dst|src or dst|src and dst] host/net (CIDR, "mask", short
// forms like "net 10") for IPv4 and IPv6; port, portrange (numbers or
// service names) with tcp/udp/sctp; ip, ip6, arp, rarp, tcp, udp, sctp,
// icmp, icmp6, igmp, igrp, pim, vrrp, carp, ah, esp; [ip|ip6|ether] proto;
// ether host/src/dst; vlan [ID]; less, greater; relations over packet data
// (proto[expr:size], len, + - * / % & | ^ << >>, unary minus, > >= = !=
// < <=, named constants such as tcpflags and tcp-syn); and, or, not (also
// && || !), parentheses, and libpcap's carrying of qualifiers to bare
// addresses ("port 80 or 443"). Anything else (host names, gateway,
// protochain, broadcast/multicast, mpls, pppoe, geneve, vxlan, 802.11,
// inbound/outbound, ...) is refused with ErrUnsupported; such filters
// can be compiled by tcpdump (tcpdump -ddd EXPR) and loaded with
// ParseProgram.
//
// The programs run in the kernel (a live capture attaches them to its
// packet socket) or in user space through Filter, on frames read from a
// file.
package bpf

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

// Classic BPF opcodes (linux/filter.h, net/bpf.h). golang.org/x/net/bpf keeps
// its own unexported, so the ones the compiler writes are spelled out here.
const (
	opLD   = 0x00
	opLDX  = 0x01
	opST   = 0x02
	opALU  = 0x04
	opJMP  = 0x05
	opRET  = 0x06
	opMISC = 0x07

	szW = 0x00
	szH = 0x08
	szB = 0x10

	mdIMM = 0x00
	mdABS = 0x20
	mdIND = 0x40
	mdMEM = 0x60
	mdLEN = 0x80
	mdMSH = 0xa0

	aluADD = 0x00
	aluSUB = 0x10
	aluMUL = 0x20
	aluDIV = 0x30
	aluOR  = 0x40
	aluAND = 0x50
	aluLSH = 0x60
	aluRSH = 0x70
	aluNEG = 0x80
	aluMOD = 0x90
	aluXOR = 0xa0

	jmpJA   = 0x00
	jmpJEQ  = 0x10
	jmpJGT  = 0x20
	jmpJGE  = 0x30
	jmpJSET = 0x40

	srcK = 0x00
	srcX = 0x08

	retK = 0x00
	retA = 0x10

	miscTAX = 0x00
	miscTXA = 0x80
)

// Linux ancillary data offsets (SKF_AD_*): a load from SKF_AD_OFF+n reads
// packet metadata instead of packet octets. Only the kernel knows them.
const (
	skfADOff            = 0xfffff000 // -0x1000
	skfADPktType        = 4
	skfADVLANTag        = 44
	skfADVLANTagPresent = 48
)

// Packet types the kernel reports through SKF_AD_PKTTYPE (linux/if_packet.h).
const pktTypeOutgoing = 4

// MaxSnaplen is what libpcap captures at most: a filter's "accept" returns it.
const MaxSnaplen = 262144

// maxInsns is the kernel's limit on a classic BPF program (BPF_MAXINSNS).
const maxInsns = 4096

// Options tune how an expression is compiled.
type Options struct {
	// Snaplen is the value a matching packet returns, which is how many
	// octets of it the kernel keeps (0: MaxSnaplen).
	Snaplen int
	// Kernel compiles for a Linux packet socket, where the kernel has taken
	// VLAN tags out of the packet into metadata: "vlan" is tested through
	// SKF_AD_VLAN_TAG_PRESENT and SKF_AD_VLAN_TAG, with the in-packet tag as
	// the alternative, as libpcap does on a live Linux capture. Such a
	// program cannot run in user space (golang.org/x/net/bpf).
	Kernel bool
}

// Error reports an expression the compiler cannot turn into a program:
// a syntax error, a qualifier that makes no sense (as libpcap reports it), or
// a part of pcap-filter(7) the compiler does not cover (Unsupported).
type Error struct {
	Expr        string
	Pos         int // octet offset in Expr where the problem is
	Msg         string
	Unsupported bool
}

func (e *Error) Error() string {
	if e.Pos >= 0 && e.Pos < len(e.Expr) {
		return fmt.Sprintf("filter %q: %s (at %q)", clip(e.Expr, 200), e.Msg, clip(e.Expr[e.Pos:], 20))
	}
	return fmt.Sprintf("filter %q: %s", clip(e.Expr, 200), e.Msg)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// ErrUnsupported is matched (errors.Is) by an *Error for syntax
// the compiler does not implement; the filter is valid for libpcap.
var ErrUnsupported = errors.New("filter syntax not supported")

func (e *Error) Is(target error) bool { return target == ErrUnsupported && e.Unsupported }

// Compile compiles a pcap-filter expression into a classic BPF program
// for frames of link type lt. An empty expression matches everything.
// Supported link types: Ethernet, raw IP (IPv4/IPv6), Linux cooked v1 and v2.
func Compile(expr string, lt layers.LinkType, o Options) ([]bpf.RawInstruction, error) {
	link, err := linkFor(lt)
	if err != nil {
		return nil, &Error{Expr: expr, Pos: -1, Msg: err.Error(), Unsupported: true}
	}
	p := &parser{expr: expr, link: link, kernel: o.Kernel}
	root, err := p.parse()
	if err != nil {
		return nil, err
	}
	snap := o.Snaplen
	if snap <= 0 || snap > MaxSnaplen {
		snap = MaxSnaplen
	}
	prog, err := generate(root, uint32(snap), p.usesM)
	if err != nil {
		return nil, &Error{Expr: expr, Pos: -1, Msg: err.Error()}
	}
	return prog, nil
}

// ParseProgram reads a program in the format of `tcpdump -ddd`: the number of
// instructions on the first line, then one instruction per line as four
// decimal numbers (code jt jf k). Blank lines and lines starting with # are
// skipped. The program is checked for what the kernel would refuse: jumps
// out of it, a last instruction that does not return.
func ParseProgram(text string) ([]bpf.RawInstruction, error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	var (
		prog []bpf.RawInstruction
		n    = -1
		line int
	)
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		f := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' })
		if n < 0 {
			if len(f) != 1 {
				return nil, fmt.Errorf("line %d: want the instruction count (tcpdump -ddd format), have %q", line, s)
			}
			v, err := strconv.ParseUint(f[0], 10, 16)
			if err != nil || v == 0 || v > maxInsns {
				return nil, fmt.Errorf("line %d: bad instruction count %q", line, f[0])
			}
			n = int(v)
			continue
		}
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: want four numbers (code jt jf k), have %q", line, s)
		}
		var v [4]uint64
		bits := [4]int{16, 8, 8, 32}
		for i := range f {
			x, err := strconv.ParseUint(f[i], 0, bits[i])
			if err != nil {
				return nil, fmt.Errorf("line %d: bad number %q", line, f[i])
			}
			v[i] = x
		}
		prog = append(prog, bpf.RawInstruction{Op: uint16(v[0]), Jt: uint8(v[1]), Jf: uint8(v[2]), K: uint32(v[3])})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, errors.New("empty program")
	}
	if len(prog) != n {
		return nil, fmt.Errorf("program announces %d instructions and has %d", n, len(prog))
	}
	if err := Check(prog); err != nil {
		return nil, err
	}
	return prog, nil
}

// Check applies the structural checks of the kernel's sk_chk_filter:
// known opcodes, jumps inside the program, scratch memory in range, and a
// return at the end.
func Check(prog []bpf.RawInstruction) error {
	if len(prog) == 0 || len(prog) > maxInsns {
		return fmt.Errorf("program length %d out of range 1..%d", len(prog), maxInsns)
	}
	for i, ins := range prog {
		class := ins.Op & 0x07
		switch class {
		case opJMP:
			if ins.Op&0xf0 == jmpJA {
				if uint64(i)+1+uint64(ins.K) >= uint64(len(prog)) {
					return fmt.Errorf("instruction %d: jump beyond the end of the program", i)
				}
			} else if i+1+int(ins.Jt) >= len(prog) || i+1+int(ins.Jf) >= len(prog) {
				return fmt.Errorf("instruction %d: jump beyond the end of the program", i)
			}
		case opLD, opLDX:
			if ins.Op&0xe0 == mdMEM && ins.K >= 16 {
				return fmt.Errorf("instruction %d: scratch memory M[%d] out of range", i, ins.K)
			}
		case opST, 0x03:
			if ins.K >= 16 {
				return fmt.Errorf("instruction %d: scratch memory M[%d] out of range", i, ins.K)
			}
		case opALU:
			if (ins.Op&0xf0 == aluDIV || ins.Op&0xf0 == aluMOD) && ins.Op&srcX == 0 && ins.K == 0 {
				return fmt.Errorf("instruction %d: division by zero", i)
			}
		}
		if _, bad := ins.Disassemble().(bpf.RawInstruction); bad {
			return fmt.Errorf("instruction %d: unknown opcode %#x", i, ins.Op)
		}
	}
	if last := prog[len(prog)-1]; last.Op&0x07 != opRET {
		return errors.New("the last instruction does not return")
	}
	return nil
}

// FormatProgram writes prog in `tcpdump -ddd` format, which ParseProgram and
// `-F` read back.
func FormatProgram(prog []bpf.RawInstruction) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n", len(prog))
	for _, ins := range prog {
		fmt.Fprintf(&b, "%d %d %d %d\n", ins.Op, ins.Jt, ins.Jf, ins.K)
	}
	return b.String()
}

// DropOutgoing prefixes prog (or, when prog is nil, a program that accepts
// snaplen octets of everything) with a test that drops packets the kernel
// reports as PACKET_OUTGOING. On a loopback interface every packet passes
// the packet socket twice, once leaving and once arriving; libpcap drops the
// outgoing copy in user space, this drops it before it takes ring space.
func DropOutgoing(prog []bpf.RawInstruction, snaplen int) []bpf.RawInstruction {
	if len(prog) == 0 {
		prog = AcceptAll(snaplen)
	}
	out := make([]bpf.RawInstruction, 0, len(prog)+3)
	out = append(out,
		bpf.RawInstruction{Op: opLD | szH | mdABS, K: skfADOff + skfADPktType},
		bpf.RawInstruction{Op: opJMP | jmpJEQ | srcK, Jt: 0, Jf: 1, K: pktTypeOutgoing},
		bpf.RawInstruction{Op: opRET | retK, K: 0},
	)
	return append(out, prog...)
}

// AcceptAll is the program of an empty filter: keep snaplen octets of every
// packet (0: MaxSnaplen).
func AcceptAll(snaplen int) []bpf.RawInstruction {
	if snaplen <= 0 || snaplen > MaxSnaplen {
		snaplen = MaxSnaplen
	}
	return []bpf.RawInstruction{{Op: opRET | retK, K: uint32(snaplen)}}
}

// ClampSnaplen lowers every constant return of prog to at most snaplen, so
// that a program from elsewhere (-F) keeps the snap length asked for.
func ClampSnaplen(prog []bpf.RawInstruction, snaplen int) []bpf.RawInstruction {
	if snaplen <= 0 || snaplen >= MaxSnaplen {
		return prog
	}
	out := append([]bpf.RawInstruction(nil), prog...)
	for i := range out {
		if out[i].Op == opRET|retK && out[i].K > uint32(snaplen) {
			out[i].K = uint32(snaplen)
		}
	}
	return out
}

// UsesAncillary reports whether prog reads Linux packet metadata, which only
// the kernel can supply.
func UsesAncillary(prog []bpf.RawInstruction) bool {
	for _, ins := range prog {
		if ins.Op&0x07 == opLD && ins.Op&0xe0 == mdABS && ins.K >= skfADOff {
			return true
		}
	}
	return false
}
