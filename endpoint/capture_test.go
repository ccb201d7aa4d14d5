package endpoint

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/pcap"
)

// The endpoint's own traffic, written with Config.Capture, decodes cleanly
// with iwdump: every operation type shows up and no finding of severity
// warning or worse is raised.
func TestCaptureDecodesWithIwdump(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"crc", Config{CRC: true}},
		{"p2p-read-rtr", Config{PeerToPeer: true, RTR: RTRRead}},
		{"v1", Config{Rev: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "ep.pcap")
			f, err := os.Create(file)
			if err != nil {
				t.Fatal(err)
			}
			capt, err := NewCapture(f)
			if err != nil {
				t.Fatal(err)
			}
			cfg := tc.cfg
			cfg.Capture = capt
			cl, sv := connect(t, pairOpts{client: cfg, server: tc.cfg})
			cmr, cbuf := cl.reg(t, 300000, AccessAll)
			smr, sbuf := sv.reg(t, 300000, AccessAll)
			fillRand(cbuf, 1)
			fillRand(sbuf, 2)
			smr.Sync()
			for _, n := range []int{0, 17, 4096, 200000} {
				sv.qp.PostRecv(RecvWR{WRID: 1, SGL: []SGE{smr.SGE(0, len(sbuf))}})
				cl.qp.PostSend(SendWR{WRID: 2, Opcode: OpSendSE, Signaled: true, SGL: []SGE{cmr.SGE(0, n)}})
				cl.waitOK(t, OpSendSE)
				sv.waitOK(t, OpRecv)
				cl.qp.PostSend(SendWR{WRID: 3, Opcode: OpWrite, Signaled: true, SGL: []SGE{cmr.SGE(0, n)}, RemoteAddr: smr.Addr(), RKey: smr.STag()})
				cl.waitOK(t, OpWrite)
				cl.qp.PostSend(SendWR{WRID: 4, Opcode: OpRead, Signaled: true, SGL: []SGE{cmr.SGE(1000, n)}, RemoteAddr: smr.Addr(), RKey: smr.STag()})
				cl.waitOK(t, OpRead)
			}
			cl.conn.Close()
			sv.conn.Close()
			if err := capt.Flush(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			// The file reads back as TCP with consistent numbers.
			r, err := pcap.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			var fr pcap.Frame
			var p pcap.Packet
			frames := 0
			for r.Next(&fr) == nil {
				if err := pcap.DecodeTCP(fr.LinkType, fr.Data, &p); err != nil {
					t.Fatalf("frame %d: %v", fr.Number, err)
				}
				frames++
			}
			r.Close()
			out, err := iwdump(t, "--fail-on", "warning", "-z", "findings", "-r", file)
			if err != nil {
				t.Fatalf("iwdump: %v\n%s", err, tail(out, 3000))
			}
			wants := []string{"MPA Request", "MPA Reply", "SendSE qn 0", "Write stag", "ReadReq msn", "ReadResp stag"}
			if tc.cfg.CRC {
				wants = append(wants, "crc good")
			}
			if strings.Contains(string(out), "crc bad") {
				t.Errorf("iwdump finds bad CRCs")
			}
			for _, want := range wants {
				if !strings.Contains(string(out), want) {
					t.Errorf("iwdump output lacks %q:\n%s", want, tail(out, 2000))
				}
			}
			t.Logf("%d frames; iwdump tail:\n%s", frames, tail(out, 600))
		})
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

var iwdumpBin string

// iwdump runs the repository's iwdump (built once per test binary).
func iwdump(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	if iwdumpBin == "" {
		bin := filepath.Join(os.TempDir(), "iwkit-endpoint-test-iwdump")
		build := exec.Command("go", "build", "-o", bin, "../cmd/iwdump")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building iwdump: %v\n%s", err, out)
		}
		iwdumpBin = bin
	}
	var b bytes.Buffer
	cmd := exec.Command(iwdumpBin, args...)
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.Bytes(), err
}
