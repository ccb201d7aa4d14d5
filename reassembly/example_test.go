package reassembly_test

import (
	"errors"
	"fmt"
	"io"
	"log"

	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
)

// Reading a capture and printing every PDU, gap and resync. The capture
// (testdata/siw) is Linux siw answering an RDMA Read Request for an
// invalid STag with a Terminate.
func Example() {
	rd, err := pcap.Open("../testdata/siw/term_read_badstag.pcap")
	if err != nil {
		log.Fatal(err)
	}
	defer rd.Close()
	h := &reassembly.Funcs{
		OnOpened: func(c *reassembly.Conn) { fmt.Printf("conn %d %v <-> %v\n", c.ID, c.Addr[0], c.Addr[1]) },
		OnPDU: func(c *reassembly.Conn, e *reassembly.PDUEvent) {
			var b []byte
			if e.PDU.IsMPAFrame {
				b = fmt.Appendf(b, "MPA %s rev %d", map[bool]string{false: "Request", true: "Reply"}[e.PDU.MPA.Reply], e.PDU.MPA.Rev)
			} else {
				b = e.PDU.AppendSummary(b)
			}
			fmt.Printf("  frame %d %v %s\n", e.LastFrame, e.Dir, b)
		},
		OnGap:    func(c *reassembly.Conn, e *reassembly.GapEvent) { fmt.Printf("  gap %v %d octets\n", e.Reason, e.Len) },
		OnResync: func(c *reassembly.Conn, e *reassembly.ResyncEvent) { fmt.Printf("  resync by %v\n", e.How) },
		OnClosed: func(c *reassembly.Conn, e *reassembly.CloseEvent) {
			fmt.Printf("conn %d closed (%v), CRC %v\n", c.ID, e.Reason, c.Params[0].CRC)
		},
	}
	a := reassembly.New(reassembly.Config{}, h)
	var fr pcap.Frame
	for {
		if err := rd.Next(&fr); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			log.Fatal(err)
		}
		if err := a.FeedFrame(&fr); err != nil && !errors.Is(err, pcap.ErrNotTCP) {
			log.Print(err)
		}
	}
	a.Flush()
	// Output:
	// conn 1 10.0.2.15:43098 <-> 10.0.2.15:7172
	//   frame 4 A>B MPA Request rev 2
	//   frame 6 B>A MPA Reply rev 2
	//   frame 8 A>B ReadReq msn 1 sink 0x8cdfce00 to 0x55d6f034e0b0 src 0x5f486000 to 0x55a8d7734320 size 256 L, crc unchecked
	//   frame 9 B>A Terminate RDMAP/RemoteProt/Invalid STag (siw encoding) blames ReadReq qn 1 msn 256 mo 0 L, crc unchecked
	// conn 1 closed (fin), CRC false
}
