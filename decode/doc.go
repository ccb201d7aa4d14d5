// Package decode holds iwkit's stateless wire codecs for iWARP: MPA
// Request/Reply frames and FPDU framing (RFC 5044, RFC 6581), DDP headers
// (RFC 5041), RDMAP headers including Read Request, Terminate and the RFC 7306
// extensions (RFC 5040, RFC 7306), the Terminate cause table, the shared field
// table, and gopacket DecodingLayers.
//
// The package imports nothing else of iwkit and does no I/O. Decoding never
// allocates: parsers take a []byte, fill a caller-owned value whose slices
// alias the input, and report how many octets they consumed. Encoders are
// append-style (Append(b []byte) []byte). Errors are *Error values that say
// which layer and field failed and whether the input was truncated (more
// octets would help) or malformed (no amount of octets would).
package decode
