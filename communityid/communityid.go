// Package communityid computes the Community ID (version 1) of a flow,
// the flow hash Zeek, Suricata and Arkime write, so that iwkit's rows
// join with theirs (https://github.com/corelight/community-id-spec).
package communityid

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"net/netip"
)

// ProtoTCP is TCP's IP protocol number, iWARP's transport.
const ProtoTCP = 6

// V1 is "1:" and the base64 of the SHA-1 of the seed (2 octets, big
// endian), the lesser endpoint's address, the greater's, the protocol, a
// zero octet, the lesser's port and the greater's (big endian): the
// lesser endpoint is the one with the lesser address, or with equal
// addresses the lesser port, so both directions have one ID. IPv4-mapped
// IPv6 addresses are hashed as IPv4.
func V1(seed uint16, proto uint8, a, b netip.AddrPort) string {
	aa, ba := a.Addr().Unmap(), b.Addr().Unmap()
	if c := aa.Compare(ba); c > 0 || c == 0 && a.Port() > b.Port() {
		a, b = b, a
		aa, ba = ba, aa
	}
	buf := make([]byte, 0, 2+16+16+2+4)
	buf = binary.BigEndian.AppendUint16(buf, seed)
	buf = append(buf, aa.AsSlice()...)
	buf = append(buf, ba.AsSlice()...)
	buf = append(buf, proto, 0)
	buf = binary.BigEndian.AppendUint16(buf, a.Port())
	buf = binary.BigEndian.AppendUint16(buf, b.Port())
	sum := sha1.Sum(buf)
	return "1:" + base64.StdEncoding.EncodeToString(sum[:])
}
