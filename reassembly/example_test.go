package reassembly_test

import (
	"errors"
	"fmt"
	"io"
	"log"

	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
)

// Reading a capture and printing every PDU, gap and resync.
func Example() {
	rd, err := pcap.Open("../../shared/captures/public/softuiwarp-422babab-rping.pcap")
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
	// Prints (the capture is read from ../shared, so this example is not
	// run as a test):
	//
	// conn 1 10.10.1.1:42742 <-> 10.10.1.2:9999
	//   frame 4 A>B MPA Request rev 1
	//   frame 6 B>A MPA Reply rev 1
	//   frame 8 A>B Send qn 0 msn 1 mo 0 len 16 L, crc unchecked
	//   frame 9 A>B Send qn 0 msn 2 mo 0 len 16 L, crc unchecked
	//   frame 10 B>A ReadReq msn 1 sink 0x40cc4300 to 0x563616bbc670 src 0xffffe080 to 0x7fffffffe080 size 64 L, crc unchecked
	//   frame 12 A>B Send qn 0 msn 3 mo 0 len 16 L, crc unchecked
	//   frame 13 A>B Send qn 0 msn 4 mo 0 len 16 L, crc unchecked
	// conn 1 closed (rst), CRC false
}
