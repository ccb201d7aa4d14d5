// Package frame builds the Ethernet frames that carry TCP over IPv4 or
// IPv6, for the traffic generator (gen) and the endpoint's capture of its
// own traffic: one place for the header layouts and the Internet checksum.
//
// Headers are views over []byte in the style of gVisor's
// pkg/tcpip/header: Ethernet, IPv4, IPv6 and TCP are slices with
// accessors and setters that read and write the octets in place, and an
// Encode that writes a whole header from its fields. Template holds the
// fixed link and network header octets of one direction of a connection
// and appends whole frames, lengths and checksums filled in.
package frame
