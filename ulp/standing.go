package ulp

import "strings"

// Standing reports a command that stays outstanding by design until the
// target has something to say, so that its having no answer at the end
// of a capture is no sign of a hung command: an NVMe Asynchronous Event
// Request (NVMe Base §5.2.2: the controller completes it only when an
// event occurs; a host keeps one or more outstanding for the
// association's life) and an SMB2 CHANGE_NOTIFY (MS-SMB2 §3.3.5.19:
// answered when the watched directory changes).
func (c *Command) Standing() bool {
	switch c.Proto {
	case NVMe:
		return c.Name == nvmeAdminNames[0x0C]
	case SMBD:
		return c.Name == "SMB2 "+smb2Cmds[0x0F]
	}
	return false
}

// AnswerFromInitiator reports a command whose answer comes from the MPA
// initiator: an NFSv4.1 callback, which the server sends on RPC-over-RDMA's
// backchannel (RFC 8167). Every other command is the initiator's and is
// answered by the responder.
func (c *Command) AnswerFromInitiator() bool {
	return c.Proto == RPCRDMA && strings.HasPrefix(c.Name, "NFSv4 callback ")
}
