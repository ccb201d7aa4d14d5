// Package frame is the one place for the layouts of the Ethernet, IPv4,
// IPv6 and TCP headers and the Internet checksum: it builds the frames the
// traffic generator (gen) and the endpoint's capture of its own traffic
// write, and pcap.DecodeTCP reads captured headers through the same
// accessors.
//
// Headers are views over []byte in the style of gVisor's
// pkg/tcpip/header: Ethernet, IPv4, IPv6 and TCP are slices with
// accessors and setters that read and write the octets in place, and an
// Encode that writes a whole header from its fields. Template holds the
// fixed link and network header octets of one direction of a connection
// and appends whole frames, lengths and checksums filled in.
package frame
