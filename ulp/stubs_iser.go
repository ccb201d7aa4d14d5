package ulp

type iserState struct{}

func (c *Conn) iserPD(at At, i2r bool, pd []byte, m *Message) bool              { return false }
func iserLooksLike(b []byte, i2r bool) bool                                      { return false }
func (c *Conn) iserSend(at At, i2r bool, a *sendAsm, b []byte, m *Message) bool { return false }
