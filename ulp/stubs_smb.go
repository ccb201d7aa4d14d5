package ulp

import "github.com/iwkit/iwkit/decode"

type smbState struct{}

func (c *Conn) smbPD(at At, i2r bool, f *decode.MPAFrame, pd []byte, m *Message) bool { return false }
func smbLooksLike(b []byte, i2r bool) bool                                             { return false }
func (c *Conn) smbSend(at At, i2r bool, a *sendAsm, b []byte, m *Message) bool        { return false }
