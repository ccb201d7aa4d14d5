package bpf

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

var fuzzLinkTypes = []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeRaw, layers.LinkTypeLinuxSLL, layers.LinkTypeLinuxSLL2}

// FuzzCompile: any string compiles to a valid program or fails with
// an error, never a panic; a program compiled for a file and one compiled
// for a live socket agree on every packet that carries no VLAN metadata.
func FuzzCompile(f *testing.F) {
	for _, e := range filterExprs {
		f.Add(e)
	}
	for _, e := range errExprs {
		f.Add(e)
	}
	for _, e := range unsupportedExprs {
		f.Add(e)
	}
	f.Add("((((tcp))))")
	f.Add("host 1.2.3.4 and (5.6.7.8 or not (9.9.9.9 and 1.1.1.1))")
	f.Add("vlan 1 and vlan 2 and vlan 3 and vlan 4 and ip")
	f.Add(strings.Repeat("tcp or ", 300) + "udp")
	pkts := testPackets()
	f.Fuzz(func(t *testing.T, expr string) {
		hasVLAN := false
		if toks, err := lex(expr); err == nil {
			for _, tk := range toks {
				hasVLAN = hasVLAN || isKW(tk, "vlan")
			}
		}
		for _, lt := range fuzzLinkTypes {
			prog, err := Compile(expr, lt, Options{})
			kprog, kerr := Compile(expr, lt, Options{Kernel: true})
			rejectsAll := func(e error) bool { return e != nil && strings.Contains(e.Error(), "rejects all packets") }
			if (err == nil) != (kerr == nil) && !rejectsAll(err) && !rejectsAll(kerr) {
				t.Fatalf("%q on %v: file mode %v, kernel mode %v", expr, lt, err, kerr)
			}
			if err != nil || kerr != nil {
				var fe *Error
				if err != nil && !errors.As(err, &fe) {
					t.Fatalf("%q: error of type %T: %v", expr, err, err)
				}
				continue
			}
			if err := Check(prog); err != nil {
				t.Fatalf("%q on %v: invalid program: %v\n%s", expr, lt, err, FormatProgram(prog))
			}
			if err := Check(kprog); err != nil {
				t.Fatalf("%q on %v: invalid kernel program: %v", expr, lt, err)
			}
			vm, err := NewVM(prog)
			if err != nil {
				t.Fatalf("%q: VM refuses the program: %v", expr, err)
			}
			for _, p := range pkts {
				n, err := vm.Run(p.data)
				if err != nil {
					t.Fatalf("%q: %v", expr, err)
				}
				k, err := kernelRun(kprog, p.data, anc{})
				if err != nil {
					t.Fatalf("%q: %v", expr, err)
				}
				// After "vlan" the two modes shift offsets differently
				// when the vlan test is skipped by short-circuiting
				// (tcpdump -r and -i differ the same way).
				if (n > 0) != (k > 0) && !hasVLAN {
					t.Fatalf("%q on %s: file program %v, kernel program %v", expr, p.name, n > 0, k > 0)
				}
			}
		}
	})
}

// FuzzRunFilter runs the table's programs on arbitrary octets: the x/net
// VM (files) and the kernel's semantics (the test interpreter) agree, and
// nothing panics.
func FuzzRunFilter(f *testing.F) {
	for i, p := range testPackets() {
		f.Add(uint8(i), p.data)
	}
	f.Add(uint8(0), []byte{})
	f.Add(uint8(3), []byte{0x45})
	type compiled struct {
		expr string
		ff   *Filter
	}
	var progs []compiled
	for _, e := range filterExprs {
		ff, err := NewFilter(e)
		if err != nil {
			continue
		}
		progs = append(progs, compiled{e, ff})
	}
	f.Fuzz(func(t *testing.T, idx uint8, pkt []byte) {
		c := progs[int(idx)%len(progs)]
		for _, lt := range fuzzLinkTypes {
			got, err := c.ff.Match(lt, pkt)
			if err != nil {
				continue // e.g. vlan on raw IP
			}
			prog, _ := Compile(c.expr, lt, Options{})
			k, err := kernelRun(prog, pkt, anc{})
			if err != nil {
				t.Fatal(err)
			}
			if got != (k > 0) {
				t.Fatalf("%q on %x: VM %v, kernel semantics %v", c.expr, pkt, got, k > 0)
			}
		}
	})
}

func TestFilter(t *testing.T) {
	pkts := testPackets()
	ff, err := NewFilter("tcp port 4420 and host 10.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pkts {
		ok, err := ff.Match(layers.LinkTypeEthernet, p.data)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			got = append(got, p.name)
		}
	}
	want := "ipv4-tcp-4420 ipv4-tcp-reply-df ipv4-frag-first"
	if strings.Join(got, " ") != want {
		t.Errorf("matched %v, want %s", got, want)
	}

	// A program in tcpdump -ddd form filters the same.
	prog, _ := Compile("udp", layers.LinkTypeEthernet, Options{})
	back, err := ParseProgram("# comment\n" + FormatProgram(prog))
	if err != nil {
		t.Fatal(err)
	}
	pf, err := NewProgramFilter(back)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts {
		m, _ := pf.Match(layers.LinkTypeEthernet, p.data)
		if m != vmVerdict(t, prog, p.data) {
			t.Errorf("%s: program filter %v", p.name, m)
		}
	}
	// A live-socket program reads metadata a file does not have.
	kprog, _ := Compile("vlan", layers.LinkTypeEthernet, Options{Kernel: true})
	if _, err := NewProgramFilter(kprog); err == nil {
		t.Error("kernel-only program accepted for files")
	}
	// Syntax errors show at once; link-type errors with the frame.
	if _, err := NewFilter("tcp port"); err == nil {
		t.Error("syntax error accepted")
	}
	vf, err := NewFilter("vlan")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vf.Match(layers.LinkTypeRaw, []byte{0x45}); err == nil {
		t.Error("vlan on raw IP accepted")
	}
}

func TestParseProgramErrors(t *testing.T) {
	for _, bad := range []string{
		"", "x", "2\n6 0 0 0\n", "1\n6 0 0\n", "1\n21 0 0 1\n", "2\n21 5 0 1\n6 0 0 0\n",
		"1\n6 0 0 99999999999\n", "1\n65535 0 0 0\n", "2\n96 0 0 20\n6 0 0 0\n",
	} {
		if _, err := ParseProgram(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseProgram("1\n6 0 0 262144\n"); err != nil {
		t.Error(err)
	}
}

func TestDropOutgoingAndSnaplen(t *testing.T) {
	prog := DropOutgoing(nil, 100)
	pkt := make([]byte, 60)
	if n, _ := kernelRun(prog, pkt, anc{pktType: pktTypeOutgoing}); n != 0 {
		t.Errorf("outgoing copy kept (%d)", n)
	}
	if n, _ := kernelRun(prog, pkt, anc{pktType: 0}); n != 100 {
		t.Errorf("incoming copy: %d, want 100", n)
	}
	c := ClampSnaplen([]bpf.RawInstruction{{Op: opRET | retK, K: MaxSnaplen}, {Op: opRET | retK, K: 0}}, 96)
	if c[0].K != 96 || c[1].K != 0 {
		t.Errorf("clamped %v", c)
	}
}

// Big and hostile inputs cost work in proportion to their size, their
// error messages stay short, and a program the kernel would refuse as too
// long is an error. Work is counted, not timed: the parser looks at each
// token a bounded number of times, and doubling an input at most about
// doubles the allocations of the whole compilation (a quadratic step
// would quadruple them).
func TestCompileFilterLargeInputs(t *testing.T) {
	for _, in := range []struct {
		n    int
		expr func(n int) string
	}{
		{600, func(n int) string { return strings.Repeat("tcp or ", n) + "udp" }},
		{100, func(n int) string { return strings.Repeat("port 80 or ", n) + "udp" }},
		{2000, func(n int) string { return strings.Repeat("(", n) + "tcp" + strings.Repeat(")", n) }},
		{5000, func(n int) string { return strings.Repeat("not ", n) + "tcp" }},
		{200000, func(n int) string { return strings.Repeat("(", n) + "tcp" + strings.Repeat(")", n) }},
		{200000, func(n int) string {
			return "host 1.2.3.4 and " + strings.Repeat("(", n) + "1.2.3.5" + strings.Repeat(")", n)
		}},
		{5000, func(n int) string { return "roo ppp" + strings.Repeat(":", n) }},
		{3000, func(n int) string { return strings.Repeat("ab:", n) }},
		{100000, func(n int) string { return strings.Repeat("a", n) }},
		{100, func(n int) string { return strings.Repeat("host 1.2.3.4 and ", n) + "tcp" }},
		{50, func(n int) string { return strings.Repeat("vlan and ", n) + "tcp" }},
		{200, func(n int) string { return strings.Repeat("not (port 80 or host 1.2.3.4) or ", n) + "udp" }},
	} {
		e := in.expr(in.n)
		p := &parser{expr: e, link: linkEthernet(t)}
		p.parse()
		if limit := 8*len(p.toks) + 64; p.reads > limit {
			t.Errorf("%.30q...: the parser read %d tokens of %d (more than %d)", e, p.reads, len(p.toks), limit)
		}
		half, full := compileMallocs(in.expr(in.n/2)), compileMallocs(e)
		if limit := 5*half/2 + 1000; full > limit {
			t.Errorf("%.30q...: %d allocations for n=%d, %d for n=%d: not linear", e, half, in.n/2, full, in.n)
		}
		prog, err := Compile(e, layers.LinkTypeEthernet, Options{})
		if err != nil && len(err.Error()) > 400 {
			t.Errorf("%.30q...: error message of %d characters", e, len(err.Error()))
		}
		if err == nil && len(prog) > maxInsns {
			t.Errorf("%.30q...: %d instructions", e, len(prog))
		}
	}
}

// compileMallocs counts the heap allocations of compiling expr.
func compileMallocs(expr string) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	Compile(expr, layers.LinkTypeEthernet, Options{})
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}

func linkEthernet(t *testing.T) linkInfo {
	t.Helper()
	link, err := linkFor(layers.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	return link
}

// BenchmarkFilter: the user-space filter on one frame (-r FILE EXPR),
// the VM running the compiled program.
func BenchmarkFilter(b *testing.B) {
	pkts := testPackets()
	for _, expr := range []string{"tcp port 4420", "tcp port 4420 and host 10.0.0.2", "tcp[13] & 2 != 0"} {
		b.Run(expr, func(b *testing.B) {
			ff, err := NewFilter(expr)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				ff.Match(layers.LinkTypeEthernet, pkts[0].data)
			}
		})
	}
}
