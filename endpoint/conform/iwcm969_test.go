package conform

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/internal/siwpeer"
)

// The remotely triggerable `kernel BUG at drivers/infiniband/core/iwcm.c:969`
// (peers/siw/iwcm-969.md), reproduced at the end of TestSiwConform's boot,
// after a check that siw↔siw in peer-to-peer mode does not hit it. The BUG
// is the expected outcome: when a kernel stops hitting it, the iwcm969
// subtest fails and says so, and the write-up must be updated.

// iwcm969Request is the smallest MPA Request that takes a siw Responder
// into its wait for an RTR (RFC 6581 §5): MPA Rev 2, S set, Private Data
// only the RFC 6581 block with A (peer-to-peer) and IRD = ORD = 1; no RTR
// type is offered, and siw proposes the zero-length Write anyway.
func iwcm969Request() []byte {
	f := decode.MPAFrame{Rev: 2, Enhanced: true, HasV2: true, V2: decode.MPAv2{PeerToPeer: true, IRD: 1, ORD: 1}}
	return f.Append(nil)
}

// iwcm969FirstFPDU takes the place of the RTR: 16 zero octets, which siw
// reads as a DDP header of version 0 (MIN_DDP_HDR is 16 octets).
var iwcm969FirstFPDU = make([]byte, 16)

const iwcm969Phase = "iwcm969"

// iwcm969Script is the guest's part: siw↔siw over lo with the same
// peer-to-peer parameters at both ends, CRC off and on (the siw
// Initiator's first FPDU is its RTR); then siw's defaults (peer_to_peer=N:
// it matters only to an Initiator) and the phase in which the host sends
// the input to rping -s -P. NO-BUG if the kernel survives it.
var iwcm969Script = fmt.Sprintf(`echo Y > $P/peer_to_peer
for crc in N Y; do
  echo $crc > $P/mpa_crc_required
  timeout 60 rping -s -a %[1]s -p 7176 -C 5 -S 64 -v > /tmp/s.log 2>&1 & SP=$!
  waitport 7176
  timeout 60 rping -c -a %[1]s -p 7176 -C 5 -S 64 -v > /tmp/c.log 2>&1; CRC=$?
  wait $SP; echo "=== SIW-SIW p2p crc=$crc server=$? client=$CRC pings=$(grep -c 'ping data' /tmp/c.log)"
done
echo N > $P/peer_to_peer; echo N > $P/mpa_crc_required
phase %[2]s
for k in $(seq 60); do sleep 0.5; done
echo NO-BUG; dmesg | tail -n 20
`, guestAddr, iwcm969Phase)

// sendIwcm969 is the whole remote input: the MPA Request, the wait for
// siw's Reply (siw drops a Request followed by more octets before its
// Reply), the 16 octets, FIN.
func sendIwcm969(port int) ([]byte, error) {
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.Write(iwcm969Request()); err != nil {
		return nil, err
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	reply := make([]byte, decode.MPAFrameHdrLen+decode.MPAv2Len)
	if _, err := io.ReadFull(c, reply); err != nil {
		return reply, fmt.Errorf("reading siw's MPA Reply: %w", err)
	}
	var f decode.MPAFrame
	if _, err := decode.ParseMPAFrame(reply, &f); err != nil || !f.Reply || f.Reject || !f.V2.PeerToPeer || !bytes.Equal(reply[:16], []byte(decode.MPAKeyRep)) {
		return reply, fmt.Errorf("siw's Reply % x is not a peer-to-peer acceptance (%v)", reply, err)
	}
	_, err = c.Write(iwcm969FirstFPDU)
	return reply, err
}

// checkSiwSiw wants both siw↔siw runs complete.
func checkSiwSiw(t *testing.T, console string) {
	runs := regexp.MustCompile(`=== SIW-SIW .*`).FindAllString(console, -1)
	if len(runs) != 2 {
		t.Errorf("want 2 siw↔siw runs, the console has %d", len(runs))
	}
	for _, m := range runs {
		t.Log(m)
		if !strings.Contains(m, "server=0 client=0 pings=5") {
			t.Errorf("siw↔siw in peer-to-peer mode did not complete: %s", m)
		}
	}
}

// checkIwcm969 wants the guest to have hit the BUG at iwcm.c:969 after
// the input, and nothing else.
func checkIwcm969(t *testing.T, r siwpeer.Result, reply []byte) {
	t.Logf("MPA Request % x\nMPA Reply   % x\nthen        % x", iwcm969Request(), reply, iwcm969FirstFPDU)
	bug := regexp.MustCompile(`kernel BUG at drivers/infiniband/core/iwcm\.c:\d+`).FindString(r.Console)
	switch {
	case strings.Contains(r.Console, "NO-BUG"):
		t.Fatalf("the guest kernel survived the input: siw/iw_cm no longer BUG on a peer-to-peer "+
			"connection whose first FPDU fails (fixed?); update peers/siw/iwcm-969.md\n%s", r.Tail(3000))
	case bug != "kernel BUG at drivers/infiniband/core/iwcm.c:969":
		t.Fatalf("want the kernel BUG at iwcm.c:969, got %q (oops %q)\n%s", bug, r.KillLine, r.Tail(4000))
	}
	t.Logf("reproduced: %s (VM killed %v)", bug, r.Killed)
}
