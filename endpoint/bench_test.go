package endpoint

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
)

var benchSizes = []int{64, 4 << 10, 64 << 10, 1 << 20}

// tcpCopy measures a plain Go TCP loopback copy of size-octet messages:
// one goroutine writes, the other reads each message whole. The result is
// cached per size so that every endpoint benchmark of a run is compared
// with the same baseline.
var (
	tcpMu    sync.Mutex
	tcpBW    = map[int]float64{}
	tcpLatNs = map[int]float64{}
)

func tcpPair(tb testing.TB) (a, b net.Conn) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		ch <- c
	}()
	a, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	return a, <-ch
}

func tcpBandwidth(tb testing.TB, size int) float64 {
	tcpMu.Lock()
	defer tcpMu.Unlock()
	if bw, ok := tcpBW[size]; ok {
		return bw
	}
	a, b := tcpPair(tb)
	defer a.Close()
	defer b.Close()
	// Write for half a second, then count what the reader got.
	var got int64
	done := make(chan struct{})
	go func() {
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(b, buf); err != nil {
				break
			}
			got += int64(size)
		}
		close(done)
	}()
	msg := make([]byte, size)
	start := time.Now()
	for i := 0; ; i++ {
		if _, err := a.Write(msg); err != nil {
			break
		}
		if i%64 == 0 && time.Since(start) > 500*time.Millisecond {
			break
		}
	}
	a.Close()
	<-done
	bw := float64(got) / time.Since(start).Seconds()
	tcpBW[size] = bw
	return bw
}

func tcpLatency(tb testing.TB, size int) float64 {
	tcpMu.Lock()
	defer tcpMu.Unlock()
	if l, ok := tcpLatNs[size]; ok {
		return l
	}
	a, b := tcpPair(tb)
	defer a.Close()
	defer b.Close()
	n := 2000
	go func() {
		buf := make([]byte, size)
		for i := 0; i < n; i++ {
			if _, err := io.ReadFull(b, buf); err != nil {
				return
			}
			b.Write(buf)
		}
	}()
	buf := make([]byte, size)
	start := time.Now()
	for i := 0; i < n; i++ {
		a.Write(buf)
		io.ReadFull(a, buf)
	}
	l := float64(time.Since(start).Nanoseconds()) / float64(n) / 2
	tcpLatNs[size] = l
	return l
}

// BenchmarkTCPCopy is the plain TCP baseline on its own.
func BenchmarkTCPCopy(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			bw := tcpBandwidth(b, size)
			b.ReportMetric(bw/1e6, "MB/s")
			b.ReportMetric(tcpLatency(b, size)/1e3, "lat-us")
		})
	}
}

func benchPair(b *testing.B, crc bool) (cl, sv *side) {
	cfg := Config{CRC: crc}
	return connect(b, pairOpts{client: cfg, server: cfg,
		clientAttr: QPAttr{SQDepth: 4096, RQDepth: 4096}, srvAttr: QPAttr{SQDepth: 4096, RQDepth: 4096}})
}

func crcName(crc bool) string {
	if crc {
		return "crc"
	}
	return "nocrc"
}

// BenchmarkWriteBW: RDMA Write bandwidth, messages posted 64 deep, beside
// the plain TCP copy of the same size (x-tcp = endpoint / TCP).
func BenchmarkWriteBW(b *testing.B) {
	for _, crc := range []bool{true, false} {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", crcName(crc), size), func(b *testing.B) {
				tcp := tcpBandwidth(b, size)
				cl, sv := benchPair(b, crc)
				cmr, _ := cl.reg(b, size, AccessAll)
				smr, _ := sv.reg(b, size, AccessAll)
				rmr, _ := sv.reg(b, 16, AccessAll)
				depth := 64
				if size >= 1<<20 {
					depth = 8
				}
				wr := SendWR{Opcode: OpWrite, SGL: []SGE{cmr.SGE(0, size)}, RemoteAddr: smr.Addr(), RKey: smr.STag()}
				b.SetBytes(int64(size))
				b.ResetTimer()
				start := time.Now()
				writeAll(b, cl, sv, rmr, wr, b.N, depth)
				el := time.Since(start)
				b.StopTimer()
				bw := float64(b.N) * float64(size) / el.Seconds()
				b.ReportMetric(bw/tcp, "x-tcp")
			})
		}
	}
}

// BenchmarkSendBW: Send bandwidth with receives reposted by the server and
// a credit message every window so the client never overruns them.
func BenchmarkSendBW(b *testing.B) {
	for _, crc := range []bool{true, false} {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", crcName(crc), size), func(b *testing.B) {
				tcp := tcpBandwidth(b, size)
				cl, sv := benchPair(b, crc)
				const win = 64
				cmr, _ := cl.reg(b, size, AccessAll)
				smr, _ := sv.reg(b, size*2*win, AccessAll)
				cr, _ := cl.reg(b, 16, AccessAll)
				for i := 0; i < 2*win; i++ {
					sv.qp.PostRecv(RecvWR{WRID: uint64(i), SGL: []SGE{smr.SGE(i*size, size)}})
				}
				for i := 0; i < 4; i++ {
					cl.qp.PostRecv(RecvWR{WRID: 1000, SGL: []SGE{cr.SGE(0, 16)}})
				}
				// Server: repost each receive, credit every window.
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					var wcs [64]WorkCompletion
					got := 0
					for got < b.N {
						n, err := sv.cq.Wait(context.Background(), wcs[:])
						if err != nil {
							return
						}
						for _, wc := range wcs[:n] {
							if wc.Opcode != OpRecv {
								continue
							}
							if wc.Status != StatusSuccess {
								return
							}
							sv.qp.PostRecv(RecvWR{WRID: wc.WRID, SGL: []SGE{smr.SGE(int(wc.WRID)*size, size)}})
							got++
							if got%win == 0 || got == b.N {
								sv.qp.PostSend(SendWR{Opcode: OpSend})
							}
						}
					}
				}()
				b.SetBytes(int64(size))
				b.ResetTimer()
				start := time.Now()
				var wcs [64]WorkCompletion
				sent, credited := 0, 0
				for credited < b.N {
					for sent < b.N && sent-credited < 2*win {
						w := SendWR{Opcode: OpSend, SGL: []SGE{cmr.SGE(0, size)}}
						if _, err := cl.qp.PostSend(w); err != nil {
							b.Fatal(err)
						}
						sent++
					}
					n, err := cl.cq.Wait(context.Background(), wcs[:])
					if err != nil {
						b.Fatal(err)
					}
					for _, wc := range wcs[:n] {
						if wc.Status != StatusSuccess {
							b.Fatalf("completion %v %v", wc.Opcode, wc.Status)
						}
						if wc.Opcode == OpRecv {
							credited = min(credited+win, sent)
							cl.qp.PostRecv(RecvWR{WRID: 1000, SGL: []SGE{cr.SGE(0, 16)}})
						}
					}
				}
				el := time.Since(start)
				b.StopTimer()
				wg.Wait()
				b.ReportMetric(float64(b.N)*float64(size)/el.Seconds()/tcp, "x-tcp")
			})
		}
	}
}

// BenchmarkLatency: half round trip of a ping-pong. "send": a Send each way;
// "write": an RDMA Write followed by a zero-length Send each way (the Send
// tells the other side the Write is placed). x-tcp is TCP's half round trip
// divided by ours (higher is better).
func BenchmarkLatency(b *testing.B) {
	for _, op := range []string{"send", "write"} {
		for _, crc := range []bool{true, false} {
			for _, size := range benchSizes {
				b.Run(fmt.Sprintf("%s/%s/%d", op, crcName(crc), size), func(b *testing.B) {
					tcp := tcpLatency(b, size)
					cl, sv := benchPair(b, crc)
					cmr, _ := cl.reg(b, size, AccessAll)
					smr, _ := sv.reg(b, size, AccessAll)
					ping := func(s *side, mr, peer *MR) {
						if op == "write" {
							s.qp.PostSend(SendWR{Opcode: OpWrite, SGL: []SGE{mr.SGE(0, size)}, RemoteAddr: peer.Addr(), RKey: peer.STag()},
								SendWR{Opcode: OpSend})
						} else {
							s.qp.PostSend(SendWR{Opcode: OpSend, SGL: []SGE{mr.SGE(0, size)}})
						}
					}
					post := func(s *side, mr *MR) { s.qp.PostRecv(RecvWR{SGL: []SGE{mr.SGE(0, size)}}) }
					waitRecv := func(s *side) {
						var wc [4]WorkCompletion
						for {
							n, _ := s.cq.Wait(context.Background(), wc[:])
							for _, w := range wc[:n] {
								if w.Opcode == OpRecv {
									return
								}
							}
						}
					}
					post(cl, cmr)
					post(sv, smr)
					go func() {
						for i := 0; i < b.N; i++ {
							waitRecv(sv)
							post(sv, smr)
							ping(sv, smr, cmr)
						}
					}()
					b.ResetTimer()
					start := time.Now()
					for i := 0; i < b.N; i++ {
						ping(cl, cmr, smr)
						waitRecv(cl)
						post(cl, cmr)
					}
					lat := float64(time.Since(start).Nanoseconds()) / float64(b.N) / 2
					b.StopTimer()
					b.ReportMetric(lat/1e3, "lat-us")
					b.ReportMetric(tcp/lat, "x-tcp")
				})
			}
		}
	}
}

// BenchmarkWriteCRCBesideTCP: RDMA Write with CRC and a plain Go TCP copy
// of the same message size, interleaved in eight rounds within one run so
// that both see the same machine load (a shared machine's load drifts in
// seconds; one cached TCP figure beside it does not). Each round moves
// b.N/8 messages through each path and waits until they are delivered
// (TCP: read by the peer; Write: a Send after them arrived). x-tcp is the
// ratio of the two totals; the cpu-ns/B metrics are the process's CPU time
// (user + system, both ends of each path) per octet moved, which a loaded
// machine disturbs much less than elapsed time.
func BenchmarkWriteCRCBesideTCP(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			cl, sv := benchPair(b, true)
			cmr, _ := cl.reg(b, size, AccessAll)
			smr, _ := sv.reg(b, size, AccessAll)
			rmr, _ := sv.reg(b, 16, AccessAll)
			ta, tb := tcpPair(b)
			defer ta.Close()
			defer tb.Close()
			const rounds = 8
			chunk := max(1, b.N/rounds)
			got := make(chan struct{})
			go func() {
				buf := make([]byte, size)
				for {
					for i := 0; i < chunk; i++ {
						if _, err := io.ReadFull(tb, buf); err != nil {
							close(got)
							return
						}
					}
					got <- struct{}{}
				}
			}()
			msg := make([]byte, size)
			depth := 64
			if size >= 1<<20 {
				depth = 8
			}
			wr := SendWR{Opcode: OpWrite, SGL: []SGE{cmr.SGE(0, size)}, RemoteAddr: smr.Addr(), RKey: smr.STag()}
			var tcpT, epT, tcpCPU, epCPU time.Duration
			b.SetBytes(int64(size))
			b.ResetTimer()
			for r := 0; r < rounds; r++ {
				c0 := cpuTime()
				t0 := time.Now()
				for i := 0; i < chunk; i++ {
					if _, err := ta.Write(msg); err != nil {
						b.Fatal(err)
					}
				}
				<-got
				t1 := time.Now()
				c1 := cpuTime()
				writeAll(b, cl, sv, rmr, wr, chunk, depth)
				tcpT += t1.Sub(t0)
				epT += time.Since(t1)
				tcpCPU += c1 - c0
				epCPU += cpuTime() - c1
			}
			b.StopTimer()
			moved := float64(rounds * chunk * size)
			b.ReportMetric(moved/tcpT.Seconds()/1e6, "tcp-MB/s")
			b.ReportMetric(moved/epT.Seconds()/1e6, "write-MB/s")
			b.ReportMetric(tcpT.Seconds()/epT.Seconds(), "x-tcp")
			b.ReportMetric(float64(tcpCPU.Nanoseconds())/moved, "tcp-cpu-ns/B")
			b.ReportMetric(float64(epCPU.Nanoseconds())/moved, "write-cpu-ns/B")
		})
	}
}

// writeAll posts n copies of the Write wr from cl, at most depth in
// flight (every depth/4-th and the last signaled), waits for their
// completions, then sends a Send into rmr: the Writes are placed once sv
// has received it (one TCP stream: it arrives after them).
func writeAll(b *testing.B, cl, sv *side, rmr *MR, wr SendWR, n, depth int) {
	var wcs [64]WorkCompletion
	posted, done := 0, 0
	for done < n {
		for posted < n && posted-done < depth {
			w := wr
			w.WRID = uint64(posted)
			w.Signaled = posted%(depth/4) == depth/4-1 || posted == n-1
			if _, err := cl.qp.PostSend(w); err != nil {
				b.Fatal(err)
			}
			posted++
		}
		k, err := cl.cq.Wait(context.Background(), wcs[:])
		if err != nil {
			b.Fatal(err)
		}
		for _, wc := range wcs[:k] {
			if wc.Status != StatusSuccess {
				b.Fatalf("completion %v", wc.Status)
			}
			if wc.Opcode == OpWrite {
				done = max(done, int(wc.WRID)+1)
			}
		}
	}
	sv.qp.PostRecv(RecvWR{WRID: 1, SGL: []SGE{rmr.SGE(0, 16)}})
	cl.qp.PostSend(SendWR{WRID: 1 << 40, Opcode: OpSend})
	sv.waitOK(b, OpRecv)
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
