package filter

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// seg is a record with TCP/IP endpoints and a time, as analyze's records
// have them (ip.src, ip.dst, tcp.srcport, tcp.dstport, time).
type seg struct {
	src, dst netip.AddrPort
	rel      time.Duration
	buf      [2][16]byte
}

func (s *seg) addr(i int, a netip.Addr) decode.Value {
	s.buf[i] = a.As16()
	return decode.Value{Kind: decode.KindAddr, B: s.buf[i][:]}
}

func segResolver(name string) (Getter[*seg], decode.FieldKind, bool) {
	switch name {
	case "ip.src":
		return func(s *seg) (decode.Value, bool) { return s.addr(0, s.src.Addr()), true }, decode.KindAddr, true
	case "ip.dst":
		return func(s *seg) (decode.Value, bool) { return s.addr(1, s.dst.Addr()), true }, decode.KindAddr, true
	case "tcp.srcport":
		return func(s *seg) (decode.Value, bool) {
			return decode.Value{Kind: decode.KindUint, U: uint64(s.src.Port())}, true
		}, decode.KindUint, true
	case "tcp.dstport":
		return func(s *seg) (decode.Value, bool) {
			return decode.Value{Kind: decode.KindUint, U: uint64(s.dst.Port())}, true
		}, decode.KindUint, true
	case "time":
		return func(s *seg) (decode.Value, bool) { return decode.Value{Kind: decode.KindTime, U: uint64(s.rel)}, true }, decode.KindTime, true
	}
	return nil, 0, false
}

func segEither(name string) (string, string, bool) {
	switch name {
	case "ip.addr":
		return "ip.src", "ip.dst", true
	case "tcp.port":
		return "tcp.srcport", "tcp.dstport", true
	}
	return "", "", false
}

// TestEndpointFields: addresses (IPv4, IPv6, prefixes), ports, the
// either-fields ip.addr and tcp.port with Wireshark's meaning of ==
// and !=, and times compared as seconds with decimals.
func TestEndpointFields(t *testing.T) {
	a := &seg{src: netip.MustParseAddrPort("10.0.0.1:40000"), dst: netip.MustParseAddrPort("10.0.0.2:4420"), rel: 1500 * time.Millisecond}
	b := &seg{src: netip.MustParseAddrPort("[fe80::1]:4420"), dst: netip.MustParseAddrPort("[fe80::2]:50000"), rel: 250 * time.Microsecond}
	// A flow from an IPv4-mapped address: the same as its IPv4 address.
	c := &seg{src: netip.MustParseAddrPort("[::ffff:10.0.0.2]:4420"), dst: netip.MustParseAddrPort("192.168.1.9:1"), rel: 3 * time.Second}
	cases := []struct {
		expr    string
		a, b, c bool
	}{
		{`ip.src == 10.0.0.1`, true, false, false},
		{`ip.dst == 10.0.0.2`, true, false, false},
		{`ip.addr == 10.0.0.2`, true, false, true},
		{`ip.addr == 10.0.0.0/24`, true, false, true},
		{`ip.addr == "10.0.0.0/8" && tcp.port == 4420`, true, false, true},
		{`ip.addr != 10.0.0.1`, false, true, true}, // neither is: a has it as source
		{`!(ip.addr == 10.0.0.1)`, false, true, true},
		{`ip.addr == fe80::2`, false, true, false},
		{`ip.src == fe80::/64`, false, true, false},
		{`ip.dst == 192.168.1.9 || ip.src==fe80::1`, false, true, true},
		{`ip.addr`, true, true, true},
		{`tcp.port == 4420`, true, true, true},
		{`tcp.srcport == 4420`, false, true, true},
		{`tcp.dstport >= 4420 and tcp.dstport < 50000`, true, false, false},
		{`tcp.port != 4420`, false, false, false},
		{`time > 1.5`, false, false, true},
		{`time >= 1.5`, true, false, true},
		{`time == 0.00025`, false, true, false},
		{`time == "1.500000"`, true, false, false},
		{`time < 1`, false, true, false},
		{`time <= 3`, true, true, true},
	}
	for _, tc := range cases {
		f, err := Compile(tc.expr, segResolver, Either(segEither))
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		for i, want := range []bool{tc.a, tc.b, tc.c} {
			if got := f.Match([]*seg{a, b, c}[i]); got != want {
				t.Errorf("%s on %c: %v, want %v", tc.expr, 'a'+i, got, want)
			}
		}
	}
	f, _ := Compile(`ip.addr == 10.0.0.0/24 && tcp.port == 4420 && time > 1.2`, segResolver, Either(segEither))
	if n := testing.AllocsPerRun(100, func() { f.Match(a) }); n != 0 {
		t.Errorf("evaluation allocates %v times", n)
	}
}

// TestEndpointFieldErrors: mistakes with addresses and times are pointed at.
func TestEndpointFieldErrors(t *testing.T) {
	cases := []struct{ expr, msg string }{
		{`ip.src == 10.0.0.300`, `bad address "10.0.0.300"`},
		{`ip.addr == bogus`, `bad address "bogus"`},
		{`ip.src > 10.0.0.1`, `only == and != apply`},
		{`ip.src contains 10`, `only == and != apply`},
		{`ip.addr == 10.0.0.0/33`, `bad address`},
		{`time > 1.2.3`, `bad time "1.2.3"`},
		{`time > 0.0000000001`, `bad time`},
		{`time contains 1`, `contains needs a string or bytes field`},
		{`ip.addrs == 1.2.3.4`, `unknown field "ip.addrs"`},
		{`ip.src ==`, `expected a value after "=="`},
	}
	for _, tc := range cases {
		_, err := Compile(tc.expr, segResolver, Either(segEither))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.expr, err, tc.msg)
		}
	}
}
