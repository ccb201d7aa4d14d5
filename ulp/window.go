package ulp

import "github.com/iwkit/iwkit/decode"

// SMB2 credits ([MS-SMB2] §3.3.1.1, §3.3.5.2.3): the server keeps a
// command sequence window of MessageIds the client may use; it starts as
// {0} and every response's CreditResponse adds that many ids at its top.
// A request uses the ids MessageId .. MessageId + CreditCharge - 1
// (CreditCharge 0, as SMB 2.0.2 sends it, counts 1, §3.2.4.1.5); one
// beyond the top is outside the window and the server terminates the
// connection. CANCEL uses no id (§3.2.4.24).

var fSMB2Charge = def("smb2.credit_charge", decode.KindUint, false, "CreditCharge: the credits (MessageIds, one per 64 KiB of payload) the request consumes ([MS-SMB2] §2.2.1.2)")

// smb2Window is the top of the command sequence window as the server's
// credits grant it.
type smb2Window struct {
	known bool   // the NEGOTIATE with MessageId 0 was seen: the window is known
	top   uint64 // ids below it were granted
}

func (c *Conn) smb2Window(at At, h []byte, resp bool, cmd uint16, msgID uint64, m *Message, first bool) {
	w := &c.smb.win
	charge := uint64(le16(h[6:]))
	if first {
		m.u(fSMB2Charge, charge)
	}
	if resp {
		if w.known {
			w.top += uint64(le16(h[14:])) // CreditResponse
		}
		return
	}
	if cmd == 0 && msgID == 0 && c.fromStart && !w.known {
		w.known, w.top = true, 1 // the window is {0} at the first NEGOTIATE
	}
	if !w.known || c.lossy || cmd == 12 {
		return
	}
	n := max(charge, 1)
	if msgID+n > w.top || msgID+n < msgID {
		c.finding(at, true, CodeSMB2CreditWindow, "SMB2 request MessageId %d CreditCharge %d uses ids up to %d, but the server's credits granted ids below %d only ([MS-SMB2] §3.3.5.2.3)",
			msgID, charge, msgID+n-1, w.top)
	}
}
