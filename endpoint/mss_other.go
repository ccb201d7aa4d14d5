//go:build !linux

package endpoint

import "net"

// tcpMSS is the usual Ethernet MSS where TCP_MAXSEG is not read.
func tcpMSS(net.Conn) int { return 1460 }
