package analyze

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
)

// lineConsumer writes one line per record: what a consumer of the library
// sees, in a form the tests can compare across worker counts.
type lineConsumer struct {
	out     *Out
	buf     []byte
	inPlace bool // append at Out.Buf, as render's Printer does
}

func (c *lineConsumer) Record(r *Record) {
	b := c.buf[:0]
	if c.inPlace {
		b = c.out.Buf()
	}
	b = strconv.AppendInt(b, int64(r.Frame), 10)
	b = append(b, ' ')
	b = append(b, r.Kind.String()...)
	if r.Conn != nil {
		b = append(b, " conn "...)
		b = c.out.AppendConn(b, r.Conn.ID)
		b = append(b, ' ')
		b = append(b, DirName(r.Conn, r.Dir)...)
	}
	b = fmt.Appendf(b, " frames %d-%d", r.FirstFrame, r.LastFrame)
	if r.HasSeq {
		b = fmt.Appendf(b, " seq %d-%d", r.Seq, r.End)
	}
	switch r.Kind {
	case KindPDU:
		b = append(b, ' ')
		b = r.PDU.PDU.AppendSummary(b)
	case KindFinding:
		b = fmt.Appendf(b, " %s %s: %s", r.Finding.Severity, r.Finding.Code, r.Finding.Message)
	case KindOperation:
		b = fmt.Appendf(b, " %v %v %d", r.Op.Kind, r.Op.Status, r.Op.Length)
	case KindNote:
		b = append(b, r.Note...)
	}
	b = append(b, '\n')
	if !c.inPlace {
		c.buf = b
	}
	c.out.Write(b)
}

func runLines(t testing.TB, files []string, workers int) ([]byte, *Report) {
	t.Helper()
	src, _, err := OpenFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	rep, err := RunOrdered(src, Config{Workers: workers}, Output{W: w}, func(_ int, o *Out) Consumer { return &lineConsumer{out: o} })
	if err != nil {
		t.Fatal(err)
	}
	w.Flush()
	return out.Bytes(), rep
}

// captures are the committed captures the library tests run over.
func captures(t testing.TB) []string {
	t.Helper()
	var names []string
	for _, pat := range []string{"../testdata/siw/*.pcap", "../testdata/gen/*.pcap", "../testdata/gen/impaired/*.pcapng"} {
		m, _ := filepath.Glob(pat)
		names = append(names, m...)
	}
	if len(names) < 10 {
		t.Fatalf("only %d captures under testdata", len(names))
	}
	return names
}

// The record stream is the same, record for record, whatever the number
// of workers; every kind of record appears over the committed captures.
func TestRecordsSameForAnyWorkers(t *testing.T) {
	kinds := map[Kind]int{}
	for _, name := range captures(t) {
		one, rep := runLines(t, []string{name}, 1)
		for _, k := range []Kind{KindPDU, KindFinding, KindOpened, KindNegotiated, KindOperation, KindClosed} {
			kinds[k] += bytes.Count(one, []byte(" "+k.String()+" "))
		}
		for _, n := range []int{2, 3} {
			got, rep2 := runLines(t, []string{name}, n)
			if !bytes.Equal(got, one) {
				t.Fatalf("%s: %d workers differ from 1:\n%s", name, n, firstDiff(got, one))
			}
			if len(rep2.ConnStats) != len(rep.ConnStats) || rep2.Worst != rep.Worst {
				t.Fatalf("%s: %d workers: report differs", name, n)
			}
		}
	}
	for _, k := range []Kind{KindPDU, KindFinding, KindOpened, KindNegotiated, KindOperation, KindClosed} {
		if kinds[k] == 0 {
			t.Errorf("no %s record over the committed captures", k)
		}
	}
}

func firstDiff(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < len(g) && i < len(w); i++ {
		if !bytes.Equal(g[i], w[i]) {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}

// Each PDU record says where its octets are: the TCP payloads of frames
// FirstFrame..LastFrame of its direction, cut to [Seq, End), are its
// octets on the wire. This is what lets a consumer (the TUI) re-read one
// PDU later without running the capture again.
// With workers the records handed out are the shards' copies: they
// locate the same octets.
func TestRecordsLocatePDUs(t *testing.T) {
	for _, name := range captures(t) {
		frames := readFrames(t, name)
		for _, workers := range []int{1, 2} {
			src, _, err := OpenFiles([]string{name})
			if err != nil {
				t.Fatal(err)
			}
			checked := 0
			_, err = Run(src, Config{Workers: workers}, consumerFunc(func(r *Record) {
				if r.Kind != KindPDU || r.PDU.Missing > 0 {
					return
				}
				got := reread(t, frames, r)
				if !bytes.Equal(got, r.PDU.Wire) {
					t.Fatalf("%s, %d workers: PDU at frame %d (frames %d-%d, seq %d-%d): re-read %d octets differ from the %d decoded",
						name, workers, r.Frame, r.FirstFrame, r.LastFrame, r.Seq, r.End, len(got), len(r.PDU.Wire))
				}
				checked++
			}))
			src.Close()
			if err != nil {
				t.Fatal(err)
			}
			if checked == 0 {
				t.Errorf("%s: no PDU checked", name)
			}
		}
	}
}

type consumerFunc func(r *Record)

func (f consumerFunc) Record(r *Record) { f(r) }

func readFrames(t *testing.T, name string) []pcap.Frame {
	t.Helper()
	rd, err := pcap.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var frames []pcap.Frame
	for {
		var f pcap.Frame
		if err := rd.Next(&f); err != nil {
			break
		}
		f.Data = append([]byte(nil), f.Data...)
		frames = append(frames, f)
	}
	return frames
}

// reread collects the octets [r.Seq, r.End) of r's direction from frames
// FirstFrame..LastFrame.
func reread(t *testing.T, frames []pcap.Frame, r *Record) []byte {
	want := r.End - r.Seq
	out := make([]byte, want)
	have := make([]bool, want)
	src, dst := r.Src, r.Dst
	for n := r.FirstFrame; n <= r.LastFrame; n++ {
		f := &frames[n-1]
		var p pcap.Packet
		if pcap.DecodeTCP(f.LinkType, f.Data, &p) != nil {
			continue
		}
		if p.Src != src.Addr() || p.Dst != dst.Addr() || p.SrcPort != src.Port() || p.DstPort != dst.Port() {
			continue
		}
		for i, c := range p.Payload {
			off := p.Seq + uint32(i) - r.Seq
			if off < want {
				out[off], have[off] = c, true
			}
		}
	}
	for i, ok := range have {
		if !ok {
			t.Fatalf("frame %d: octet %d of seq %d-%d not in frames %d-%d", r.Frame, i, r.Seq, r.End, r.FirstFrame, r.LastFrame)
		}
	}
	return out
}

// The merger forgets the numbers of connections that end without being
// taken for iWARP: on a capture of many short plain TCP connections (and
// a few iWARP ones) it holds only the iWARP ones at the end, and the
// records match one worker's.
func TestWorkersForgetPlainTCP(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plain.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pcap.NewWriter(f, pcap.FormatPcap, layers.LinkTypeEthernet, 65535)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	const flows = 3000
	for i := 0; i < flows; i++ {
		src := [4]byte{10, 9, byte(i >> 8), byte(i)}
		for k, flags := range []string{"S", "P", "R"} {
			ts = ts.Add(time.Microsecond)
			if err := w.WriteFrame(ts, tcpFrame(t, src, uint16(30000+i%20000), flags, uint32(1000+k), []byte("plain TCP, not iWARP")), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.Flush()
	f.Close()
	iw := filepath.Join(dir, "rping.pcap")
	writeGen(t, iw, "rping", gen.Params{Seed: 2, Count: 3, Conns: 3})
	var held [2]int
	mergerDone = func(m *outMerger) { held = [2]int{len(m.iwarp), len(m.pending)} }
	defer func() { mergerDone = nil }()
	one, _ := runLines(t, []string{path, iw}, 1)
	two, _ := runLines(t, []string{path, iw}, 2)
	if !bytes.Equal(one, two) {
		t.Fatalf("2 workers differ: %s", firstDiff(two, one))
	}
	if held != [2]int{3, 0} {
		t.Errorf("merger holds %d iWARP and %d other connection numbers at the end, want 3 and 0", held[0], held[1])
	}
}

func writeGen(t *testing.T, path, scenario string, p gen.Params) {
	t.Helper()
	sc, err := gen.Builtin(scenario, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.WriteFile(path, sc, nil); err != nil {
		t.Fatal(err)
	}
}

// tcpFrame builds an Ethernet/IPv4/TCP frame from src:port to 10.9.255.1:80.
func tcpFrame(t *testing.T, src [4]byte, port uint16, flags string, seq uint32, payload []byte) []byte {
	eth := &layers.Ethernet{SrcMAC: []byte{2, 0, 0, 0, 0, 1}, DstMAC: []byte{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: src[:], DstIP: []byte{10, 9, 255, 1}}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(port), DstPort: 80, Seq: seq, Window: 65535,
		SYN: flags == "S", PSH: flags == "P", ACK: flags == "P", RST: flags == "R"}
	tcp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	var pl []byte
	if flags == "P" {
		pl = payload
	}
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, tcp, gopacket.Payload(pl)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
