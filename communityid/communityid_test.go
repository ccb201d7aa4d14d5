package communityid

import (
	"net/netip"
	"testing"
)

// TestV1: the spec's and Zeek's test vectors (zeek's
// testing/btest/bifs/community_id_v1.zeek), in both directions.
func TestV1(t *testing.T) {
	for _, c := range []struct {
		a, b string
		seed uint16
		want string
	}{
		{"1.2.3.4:1122", "5.6.7.8:3344", 0, "1:wCb3OG7yAFWelaUydu0D+125CLM="},
		{"128.232.110.120:34855", "66.35.250.204:80", 0, "1:LQU9qZlK+B5F3KDmev6m5PMibrg="},
	} {
		a, b := netip.MustParseAddrPort(c.a), netip.MustParseAddrPort(c.b)
		if got := V1(c.seed, ProtoTCP, a, b); got != c.want {
			t.Errorf("%s -> %s: %s, want %s", a, b, got, c.want)
		}
		if got := V1(c.seed, ProtoTCP, b, a); got != c.want {
			t.Errorf("%s -> %s: %s, want %s", b, a, got, c.want)
		}
	}
}
