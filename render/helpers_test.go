package render

import (
	"bytes"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
)

// pduCollector keeps a copy of every PDU reassembly delivers, so the
// encoders can be run over real PDUs outside the pipeline.
type pduCollector struct{ pdus []decode.PDU }

func (c *pduCollector) Opened(*reassembly.Conn)                                   {}
func (c *pduCollector) Negotiated(*reassembly.Conn, reassembly.Dir)               {}
func (c *pduCollector) Gap(*reassembly.Conn, *reassembly.GapEvent)                {}
func (c *pduCollector) Resync(*reassembly.Conn, *reassembly.ResyncEvent)          {}
func (c *pduCollector) Retransmission(*reassembly.Conn, *reassembly.RetransEvent) {}
func (c *pduCollector) Finding(*reassembly.Conn, *reassembly.FindingEvent)        {}
func (c *pduCollector) Closed(*reassembly.Conn, *reassembly.CloseEvent)           {}
func (c *pduCollector) PDU(_ *reassembly.Conn, e *reassembly.PDUEvent) {
	c.pdus = append(c.pdus, clonePDU(&e.PDU))
}

// clonePDU copies the octets a PDU aliases: reassembly reuses its buffers
// once the event returns.
func clonePDU(p *decode.PDU) decode.PDU {
	q := *p
	q.MPA.PrivateData = slices.Clone(p.MPA.PrivateData)
	q.FPDU.ULPDU = slices.Clone(p.FPDU.ULPDU)
	q.FPDU.Pad = slices.Clone(p.FPDU.Pad)
	q.Markers = slices.Clone(p.Markers)
	q.Seg.Payload = slices.Clone(p.Seg.Payload)
	q.Seg.Terminate.TermDDPRaw = slices.Clone(p.Seg.Terminate.TermDDPRaw)
	q.Seg.Terminate.TermRDMARaw = slices.Clone(p.Seg.Terminate.TermRDMARaw)
	return q
}

// readPDUs reassembles a capture (pcap or pcapng) into its PDUs.
func readPDUs(t testing.TB, r io.Reader) []decode.PDU {
	t.Helper()
	pr, err := pcap.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	var c pduCollector
	a := reassembly.New(reassembly.Config{}, &c)
	var fr pcap.Frame
	for {
		err := pr.Next(&fr)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		a.FeedFrame(&fr) // non-TCP frames carry no PDUs
	}
	a.Flush()
	return c.pdus
}

// testdataCaptures lists the committed captures under testdata/ (the
// golden outputs are not captures).
func testdataCaptures(t testing.TB) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir("../testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "golden" {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".pcap") || strings.HasSuffix(path, ".pcapng") {
			names = append(names, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no captures under testdata")
	}
	return names
}

// generatedCapture runs a built-in iwgen scenario into an in-memory pcap.
func generatedCapture(t testing.TB, name string, p gen.Params) *bytes.Buffer {
	t.Helper()
	sc, err := gen.Builtin(name, p)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := gen.WriteCapture(&buf, pcap.FormatPcap, sc, nil); err != nil {
		t.Fatal(err)
	}
	return &buf
}
