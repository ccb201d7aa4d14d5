package ulp

import (
	"time"

	"github.com/iwkit/iwkit/decode"
)

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
	next  uint64 // ids below it were used
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
			c.window(WinSMB2Credits, int64(w.top)-int64(w.next))
			c.window(WinSMB2Granted, int64(w.top))
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
	w.next = max(w.next, msgID+n)
	c.window(WinSMB2Credits, int64(w.top)-int64(w.next))
	c.window(WinSMB2Granted, int64(w.top)) // from the NEGOTIATE: {0}
	c.window(WinSMB2Used, int64(w.next))
	if msgID+n > w.top || msgID+n < msgID {
		c.finding(at, true, CodeSMB2CreditWindow, "SMB2 request MessageId %d CreditCharge %d uses ids up to %d, but the server's credits granted ids below %d only ([MS-SMB2] §3.3.5.2.3)",
			msgID, charge, msgID+n-1, w.top)
	}
}

// Flow-control windows over time (issue 27): what each protocol lets the
// sender have outstanding, recorded at every change of the queue's
// connection, as Depth records the outstanding commands.
const (
	WinSMBDClient  = iota // SMB Direct send credits the client holds ([MS-SMBD] §3.1.5.1)
	WinSMBDServer         // ... the server holds
	WinSMB2Credits        // SMB2 MessageIds granted and not yet used ([MS-SMB2] §3.3.1.1)
	WinRPCCredits         // RPC-over-RDMA credits the responder granted (RFC 8166 §3.3.1)
	WinISCSICmdSN         // iSCSI command window MaxCmdSN - ExpCmdSN + 1 (RFC 7143 §4.2.2.1)
	WinNVMeSQHead         // NVMe SQ head pointer, SQHD of the completions (NVMe Base §4.6)
	WinNVMeSQTail         // NVMe SQ tail: the commands the host submitted, modulo the queue size
	// The iSCSI window's edges and what the initiator sent against them
	// (RFC 7143 §4.2.2.1): ExpCmdSN and MaxCmdSN of the target's PDUs, the
	// CmdSN of each non-immediate command; serial numbers (Serial).
	WinISCSIExpCmdSN
	WinISCSIMaxCmdSN
	WinISCSICmdSNSent
	// The SMB2 command sequence window's edges ([MS-SMB2] §3.3.1.1): the
	// MessageIds the server's credits granted (ids below it) and those the
	// client used (MessageId + CreditCharge of its latest request);
	// WinSMB2Credits is their difference.
	WinSMB2Granted
	WinSMB2Used
	NumWindows
)

// WindowNames name the windows, as the -z tables print them.
var WindowNames = [NumWindows]string{"smbd client credits", "smbd server credits", "smb2 credits", "rpcrdma credits", "iscsi cmdsn window", "nvme sq head", "nvme sq tail",
	"iscsi expcmdsn", "iscsi maxcmdsn", "iscsi cmdsn", "smb2 messageids granted", "smb2 messageids used"}

// Sequence says which windows are positions in a sequence (an edge of a
// window, a number sent against it) rather than counts: compare them with
// each other; their min and max say nothing (-z leaves them out, --plot
// draws them). Serial says which of those are 32-bit serial numbers (RFC
// 1982), whose order wraps (Window.Series values as uint32).
var (
	Sequence = [NumWindows]bool{WinISCSIExpCmdSN: true, WinISCSIMaxCmdSN: true, WinISCSICmdSNSent: true, WinSMB2Granted: true, WinSMB2Used: true}
	Serial   = [NumWindows]bool{WinISCSIExpCmdSN: true, WinISCSIMaxCmdSN: true, WinISCSICmdSNSent: true}
)

// WindowPoint is a window's value from Time on (Frame changed it).
type WindowPoint struct {
	Time  time.Time
	Frame int
	Value int64
}

// Window is one window's series (at most MaxDepthPoints points).
type Window struct {
	Series    []WindowPoint
	Truncated bool
}

// window records value v of window w, when it changed.
func (c *Conn) window(w int, v int64) {
	s := &c.windows[w]
	if n := len(s.Series); n > 0 && s.Series[n-1].Value == v {
		return
	}
	if len(s.Series) >= MaxDepthPoints {
		s.Truncated = true
		return
	}
	s.Series = append(s.Series, WindowPoint{c.now, c.nowFrame, v})
}

// smbdCredits records both sides' SMB Direct send credits.
func (c *Conn) smbdCredits() {
	st := &c.smb
	if st.creditsKnown[0] {
		c.window(WinSMBDClient, int64(st.credits[0]))
	}
	if st.creditsKnown[1] {
		c.window(WinSMBDServer, int64(st.credits[1]))
	}
}

// nvmeSQTail counts a submitted NVMe command into the SQ tail.
func (c *Conn) nvmeSQTail() {
	st := &c.nvme
	size := 0
	switch {
	case st.connectSQSize > 0:
		size = int(st.connectSQSize) + 1
	case st.pdReq:
		size = int(st.hsqsize) + 1
	}
	c.sqTail++
	if size > 0 {
		c.sqTail %= size
	}
	c.window(WinNVMeSQTail, int64(c.sqTail))
}
