package analyze

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/iwkit/iwkit/pcap"
)

// FuzzCapture drives whole crafted captures through Run (issue 32): the
// TCP reassembly, the MPA framer, the decoders, the tracker and every
// storage-protocol decoder, on one worker and on three, so that a crash
// anywhere between a frame and its record is reachable from one input,
// and the records must be the same whatever the number of workers (the
// sharded engine's contract, TestRecordsSameForAnyWorkers).
//
// The input is a frame sequence rather than a pcap file, so that mutations
// land in the conversation instead of breaking record headers:
//
//	octet 0: bits 0-2 the server port (fuzzPorts: each storage protocol's
//	         well-known port, and others); bit 3: no TCP handshake (the
//	         capture starts mid-stream)
//	then frames: ctl, length (2 octets, big-endian; at most 4096 and what
//	         is left), payload
//	ctl: bit 0 direction (1: server to client); bits 1-2 the sequence
//	     number: 0 the next octet, 1 after a 1000-octet hole, 2 the
//	     previous segment's again (a retransmission), 3 half of it again
//	     (an overlap); bit 3 FIN; bit 4 RST; bits 5-6 the connection (four
//	     clients of the one server, each its own flow and shard)
//
// Seeds: the first frames of the committed storage-protocol captures and
// the hostile ones, converted (captureSeed), kept small.
func FuzzCapture(f *testing.F) {
	for _, pat := range []string{"../testdata/ulp/gen_*.pcap", "../testdata/hostile/*.pcap"} {
		files, _ := filepath.Glob(pat)
		for _, file := range files {
			if s := captureSeed(f, file); len(s) > 1 {
				f.Add(s)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		one := runFuzzCapture(t, data, 1)
		three := runFuzzCapture(t, data, 3)
		if !bytes.Equal(one, three) {
			t.Fatalf("3 workers differ from 1:\n%s", firstDiff(three, one))
		}
	})
}

var fuzzPorts = [8]uint16{4420, 3260, 5445, 20049, 445, 2049, 7174, 40000}

// Seed limits: frames and octets per seed, octets per frame.
const (
	seedFrames   = 24
	seedOctets   = 6 << 10
	seedFrameCap = 1600
	fuzzFrameCap = 4096
)

// runFuzzCapture runs the frames data encodes and returns the records as
// lines.
func runFuzzCapture(t *testing.T, data []byte, workers int) []byte {
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	src := &synth{next: fuzzFrames(data)}
	if _, err := RunOrdered(src, Config{Workers: workers}, Output{W: w}, func(_ int, o *Out) Consumer { return &lineConsumer{out: o} }); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	return out.Bytes()
}

// fuzzFrames decodes the frame sequence of FuzzCapture.
func fuzzFrames(data []byte) func(i int, f *synthFrame) bool {
	if len(data) == 0 {
		return func(int, *synthFrame) bool { return false }
	}
	port, handshake := fuzzPorts[data[0]&7], data[0]&8 == 0
	data = data[1:]
	srv := [4]byte{10, 0, 0, 2}
	type flow struct {
		started    bool
		next, prev [2]uint32 // next sequence number, previous segment's start, per direction
		prevLen    [2]int
		// pending: handshake frames still to send (3, 2, 1), then -1: the
		// input's frame that started the connection.
		pending int
	}
	var flows [4]flow
	var cur *flow
	var curIdx int
	var ctl byte
	var payload []byte
	return func(i int, f *synthFrame) bool {
		if cur == nil || cur.pending == 0 {
			// The next frame of the input.
			if len(data) < 3 {
				return false
			}
			ctl = data[0]
			n := min(int(binary.BigEndian.Uint16(data[1:])), fuzzFrameCap, len(data)-3)
			payload, data = data[3:3+n], data[3+n:]
			curIdx = int(ctl>>5) & 3
			cur = &flows[curIdx]
			if !cur.started {
				cur.started = true
				cur.next = [2]uint32{1000 + uint32(curIdx)<<24, 5000 + uint32(curIdx)<<24}
				if handshake {
					cur.pending = 3
				}
			}
		}
		cli := [4]byte{10, 0, 0, 1}
		cport := uint16(40001 + curIdx)
		if cur.pending > 0 {
			// SYN, SYN-ACK, ACK before the connection's first frame.
			switch cur.pending {
			case 3:
				*f = synthFrame{src: cli, dst: srv, sport: cport, dport: port, seq: cur.next[0], flags: tcpSYN}
				cur.next[0]++
			case 2:
				*f = synthFrame{src: srv, dst: cli, sport: port, dport: cport, seq: cur.next[1], ack: cur.next[0], flags: tcpSYN | tcpACK}
				cur.next[1]++
			case 1:
				*f = synthFrame{src: cli, dst: srv, sport: cport, dport: port, seq: cur.next[0], ack: cur.next[1], flags: tcpACK}
			}
			cur.pending--
			if cur.pending == 0 {
				cur.pending = -1 // the input's frame comes next, without reading
			}
			return true
		}
		cur.pending = 0
		d := int(ctl & 1)
		seq := cur.next[d]
		switch (ctl >> 1) & 3 {
		case 1:
			seq += 1000
		case 2:
			seq = cur.prev[d]
		case 3:
			seq = cur.prev[d] + uint32(cur.prevLen[d]/2)
		}
		flags := uint8(tcpACK | tcpPSH)
		if ctl&8 != 0 {
			flags |= 0x01 // FIN
		}
		if ctl&16 != 0 {
			flags = 0x04 | tcpACK // RST
		}
		if end := seq + uint32(len(payload)); int32(end-cur.next[d]) > 0 {
			cur.next[d] = end
		}
		cur.prev[d], cur.prevLen[d] = seq, len(payload)
		if flags&0x01 != 0 {
			cur.next[d]++
		}
		if d == 0 {
			*f = synthFrame{src: cli, dst: srv, sport: cport, dport: port, seq: seq, ack: cur.next[1], flags: flags, payload: payload}
		} else {
			*f = synthFrame{src: srv, dst: cli, sport: port, dport: cport, seq: seq, ack: cur.next[0], flags: flags, payload: payload}
		}
		return true
	}
}

// captureSeed converts the first frames of a capture to FuzzCapture's
// encoding: the payloads of its first four connections in order, the
// server port of the first one.
func captureSeed(tb testing.TB, file string) []byte {
	tb.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := pcap.NewReader(bytes.NewReader(data))
	if err != nil {
		tb.Fatal(err)
	}
	type key struct{ cport, sport uint16 }
	conns := map[key]int{}
	seed := []byte{7}
	var fr pcap.Frame
	var p pcap.Packet
	for frames := 0; frames < seedFrames; {
		if r.Next(&fr) != nil {
			break
		}
		if pcap.DecodeTCP(fr.LinkType, fr.Data, &p) != nil || len(p.Payload) == 0 {
			continue
		}
		// The server is the lower port (the captures' clients use
		// ephemeral ones).
		k, dir := key{p.SrcPort, p.DstPort}, byte(0)
		if p.SrcPort < p.DstPort {
			k, dir = key{p.DstPort, p.SrcPort}, 1
		}
		c, ok := conns[k]
		if !ok {
			if len(conns) == 4 {
				continue
			}
			c = len(conns)
			conns[k] = c
			if c == 0 {
				for i, port := range fuzzPorts {
					if port == k.sport {
						seed[0] = byte(i)
					}
				}
			}
		}
		pl := p.Payload[:min(len(p.Payload), seedFrameCap)]
		if len(seed)+3+len(pl) > seedOctets {
			break
		}
		seed = append(seed, dir|byte(c)<<5, byte(len(pl)>>8), byte(len(pl)))
		seed = append(seed, pl...)
		frames++
	}
	return seed
}
