// Package digits writes unsigned integers in decimal and in hex, for the
// text lines and NDJSON objects iwdump prints once per PDU: what
// strconv.AppendUint does, without its generic path (a zeroed buffer on
// the stack, a division per digit for bases other than 10, a copy out).
// The digits go straight to their place, back to front from the end the
// digit count gives, two at a time in decimal.
package digits

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strconv"
	"time"
)

// Len is the number of decimal digits of x > 0: log10(2) is about
// 1233/4096, which from the bit length gives the count or one less.
func Len(x uint64) int {
	d := bits.Len64(x) * 1233 >> 12
	if x >= pow10[d] {
		d++
	}
	return d
}

// pow10 are the powers of ten a uint64 can hold.
var pow10 = [20]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// Put writes x in decimal at b[n:] and returns the new end; b must have
// room (at most 20 octets). Most values are a single digit, written
// inline.
func Put(b []byte, n int, x uint64) int {
	if x < 10 {
		b[n] = '0' + byte(x)
		return n + 1
	}
	return put(b, n, x)
}

// put writes x >= 10 in decimal at b[n:].
func put(b []byte, n int, x uint64) int {
	end := n + Len(x)
	i := end
	for x >= 1e8 { // 32-bit arithmetic for all but the top 8 digits
		put8(b, i-8, uint32(x%1e8))
		x /= 1e8
		i -= 8
	}
	lo := uint32(x)
	for lo >= 100 {
		i -= 2
		binary.LittleEndian.PutUint16(b[i:], pairs[lo%100])
		lo /= 100
	}
	if lo >= 10 {
		binary.LittleEndian.PutUint16(b[i-2:], pairs[lo])
	} else {
		b[i-1] = '0' + byte(lo)
	}
	return end
}

// put8 writes x < 1e8 as exactly 8 digits at b[i:].
func put8(b []byte, i int, x uint32) {
	hi, lo := x/10000, x%10000
	b = b[i : i+8]
	binary.LittleEndian.PutUint16(b[0:], pairs[hi/100])
	binary.LittleEndian.PutUint16(b[2:], pairs[hi%100])
	binary.LittleEndian.PutUint16(b[4:], pairs[lo/100])
	binary.LittleEndian.PutUint16(b[6:], pairs[lo%100])
}

// pairs holds "00" to "99", each as the octets of a little-endian uint16.
var pairs = func() (t [100]uint16) {
	for i := range t {
		t[i] = uint16('0'+i/10) | uint16('0'+i%10)<<8
	}
	return t
}()

// Append appends x in decimal, as strconv.AppendUint(b, x, 10).
func Append(b []byte, x uint64) []byte {
	if x < 10 {
		return append(b, '0'+byte(x))
	}
	n := len(b)
	b = slices.Grow(b, 20)
	return b[:put(b[:n+20], n, x)]
}

// AppendPadded appends x < 10^width in decimal, zero-padded to width
// digits (at most 8), as fmt's %0*d: the fraction of a time stamp.
func AppendPadded(b []byte, x uint32, width int) []byte {
	n := len(b)
	b = slices.Grow(b, 8)[:n+width]
	i := n + width
	for ; i-n >= 2; i -= 2 {
		binary.LittleEndian.PutUint16(b[i-2:], pairs[x%100])
		x /= 100
	}
	if i > n {
		b[n] = '0' + byte(x%10)
	}
	return b
}

// AppendHex appends x in lower-case hex without a prefix, as
// strconv.AppendUint(b, x, 16): all sixteen digits at once in two words
// (each nibble spread to an octet, then made a digit), then the
// significant ones appended.
func AppendHex(b []byte, x uint64) []byte {
	var t [16]byte
	binary.BigEndian.PutUint64(t[0:], hex8(uint32(x>>32)))
	binary.BigEndian.PutUint64(t[8:], hex8(uint32(x)))
	d := max(1, (bits.Len64(x)+3)/4)
	return append(b, t[16-d:]...)
}

// hex8 returns the eight hex digits of x, the first in the top octet.
func hex8(x uint32) uint64 {
	v := uint64(x)
	v = (v<<16 | v) & 0x0000FFFF0000FFFF
	v = (v<<8 | v) & 0x00FF00FF00FF00FF
	v = (v<<4 | v) & 0x0F0F0F0F0F0F0F0F                           // nibble k (from the top) in octet k (from the top)
	letters := (v + 0x0606060606060606) >> 4 & 0x0101010101010101 // 1 where the nibble is 10 or more
	return v + 0x3030303030303030 + letters*('a'-'0'-10)
}

// AppendSeconds writes d in seconds with 6 decimals, as
// strconv.AppendFloat(b, d.Seconds(), 'f', 6, 64) does, in integers: the
// float path costs ~5% of an iwdump run. Exact ties (500 ns past a
// microsecond) and values the float cannot hold to the nanosecond take the
// float path, whose rounding they follow. iwdump's times (text lines,
// NDJSON, -e time) and the display filter's time use it.
func AppendSeconds(b []byte, d time.Duration) []byte {
	const limit = 1e6 * time.Second
	us, rem := d/time.Microsecond, d%time.Microsecond
	if d < 0 || d >= limit || rem == 500 {
		return strconv.AppendFloat(b, d.Seconds(), 'f', 6, 64)
	}
	if rem > 500 {
		us++
	}
	b = Append(b, uint64(us/1e6))
	return AppendMicros(b, int(us%1e6))
}

// AppendMicros appends the 6-digit fraction of a second: ".000123".
func AppendMicros(b []byte, us int) []byte {
	return AppendPadded(append(b, '.'), uint32(us), 6)
}

// AppendNanos writes d in seconds with 9 decimals, as tshark's relative
// and epoch times (frame.time_relative, frame.time_epoch).
func AppendNanos(b []byte, d time.Duration) []byte {
	if d < 0 {
		b = append(b, '-')
		d = -d
	}
	b = strconv.AppendInt(b, int64(d/time.Second), 10)
	ns := int64(d % time.Second)
	b = append(b, '.')
	for div := int64(1e8); div > 0; div /= 10 {
		b = append(b, byte('0'+ns/div%10))
	}
	return b
}
