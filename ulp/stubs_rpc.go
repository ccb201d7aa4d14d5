package ulp

import "github.com/iwkit/iwkit/decode"

type rpcState struct{}

func (c *Conn) rpcPD(at At, i2r bool, pd []byte, m *Message) bool              { return false }
func rpcLooksLike(b []byte) bool                                                { return false }
func (c *Conn) rpcSend(at At, i2r bool, a *sendAsm, b []byte, m *Message) bool { return false }

var _ = decode.OpSend
