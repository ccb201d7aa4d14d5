package conform

import (
	"bytes"
	"context"
	"fmt"

	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/endpoint/rping"
)

// The MULPDU overrun (RFC 5044 §4.5, RFC 5041 §5.2): a DDP Segment is
// sized to the sender's MULPDU, whose range "MUST be between 128 octets
// and 64768 octets", and "the sending DDP MUST NOT post a ULPDU larger
// than 64768 octets to MPA"; a receiver's MPA "is not REQUIRED to support
// a ULPDU Length that is greater than the current MULPDU". An FPDU whose
// ULPDU_Length is above 64768 exceeds every MULPDU a receiver can have,
// whatever its EMSS. The receiver may refuse it (a Terminate: no RFC code
// names the fault; receiver-checks MPA-21 counts it "Segment size
// invalid", a DDP Local Catastrophic Error, RFC 5041 §7.2 / RFC 5040
// §8) or close; or it may take it, and then it must place every octet
// where the Write's TO says (RFC 5041 §5.2), which the case reads back.

// mulpduOverrun is the ULPDU_Length of the case's one FPDU: the largest
// the 16-bit field holds, above 64768.
const mulpduOverrun = 0xFFFF

// mulpduPayload is the Write's payload in that FPDU: the ULPDU less the
// tagged DDP header (RFC 5041 §4.3: 14 octets).
const mulpduPayload = mulpduOverrun - 14

func mulpduCases() []Case {
	return []Case{{ID: "mpa-mulpdu-overrun", Clause: "RFC 5044 §4.5, RFC 5041 §5.2 (MPA-21)",
		Sent:     fmt.Sprintf("RDMA Write as one FPDU of ULPDU_Length %d (above 64768, every MULPDU), then a Read of it back", mulpduOverrun),
		needSTag: true, config: func(cfg *endpoint.Config) { cfg.MULPDU = mulpduOverrun },
		expect: term(1, 0, 0x00).or(0, 0, 0x00).or(2, 0, 0x00).orClose().orPlaced(), run: mulpduWrite}}
}

// orPlaced also takes the Write placed intact, read back (a receiver MAY
// support a ULPDU above its MULPDU).
func (e expect) orPlaced() expect {
	e.placed = true
	return e
}

// mulpduWrite Writes mulpduPayload octets of a pattern into the target's
// learned buffer in one FPDU, Reads them back and compares. A target that
// refused the FPDU ends the connection, and the case's reaction is how.
func mulpduWrite(c *conn) (string, error) {
	if c.o.Size < mulpduPayload {
		return fmt.Sprintf("needs an rping target buffer of %d octets (rping -S 65535, --size 65535)", mulpduPayload), nil
	}
	if c.ec.Params().MULPDU < mulpduOverrun || c.ec.Params().MarkersTx {
		// Markers would split the FPDU's octets, not its ULPDU; the
		// MULPDU is ours to set (the endpoint caps it at 0xFFFF).
		return "the FPDU cannot be sent whole (markers negotiated)", nil
	}
	s, to, _ := c.stag()
	rping.Pattern(c.data.Buf()[:mulpduPayload], 7)
	back, err := c.pd.RegisterMR(make([]byte, mulpduPayload), endpoint.AccessLocalWrite|endpoint.AccessRemoteWrite, nil) // a Read's sink takes tagged Read Responses
	if err != nil {
		return "", err
	}
	w := c.write(s, to, mulpduPayload)
	rd := endpoint.SendWR{WRID: 61, Opcode: endpoint.OpRead, Signaled: true, SGL: []endpoint.SGE{back.SGE(0, mulpduPayload)}, RemoteAddr: to, RKey: s}
	if err := c.post(w, rd); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.o.Timeout)
	defer cancel()
	var wc [1]endpoint.WorkCompletion
	for {
		if _, err := c.cq.Wait(ctx, wc[:]); err != nil {
			return "", nil // no Read Response: the reaction says why
		}
		if wc[0].WRID != 61 {
			continue
		}
		if wc[0].Status != endpoint.StatusSuccess {
			return "", nil // flushed by the target's Terminate or close
		}
		break
	}
	if !bytes.Equal(back.Buf(), c.data.Buf()[:mulpduPayload]) {
		i := 0
		for i < mulpduPayload && back.Buf()[i] == c.data.Buf()[i] {
			i++
		}
		c.done = &reaction{kind: "misplaced", note: fmt.Sprintf("the Read returned other octets from %d on", i)}
		return "", nil
	}
	c.done = &reaction{kind: "placed", note: fmt.Sprintf("all %d octets read back", mulpduPayload)}
	return "", nil
}
