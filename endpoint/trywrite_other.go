//go:build !linux

package endpoint

import "net"

// tryWritev cannot write without waiting here: every batch goes to the send
// engine.
func tryWritev(net.Conn, [][]byte) (int, bool, error) { return 0, false, nil }
