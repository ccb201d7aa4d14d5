package ulp

import (
	"testing"

	"github.com/iwkit/iwkit/decode"
)

// TestAppendID: a command's ID is written in its field's base, as -V and
// the summaries write that field (iwtui's commands and STags views used
// decimal for every protocol).
func TestAppendID(t *testing.T) {
	for _, c := range []struct {
		p    Proto
		id   uint64
		want string
	}{{ISER, 0x1000000, "0x1000000"}, {RPCRDMA, 0xdeadbeef, "0xdeadbeef"}, {NVMe, 4097, "4097"}, {SMBD, 7, "7"}, {None, 3, "3"}} {
		if got := string(AppendID(nil, c.p, c.id)); got != c.want {
			t.Errorf("%v id %d: %q, want %q", c.p, c.id, got, c.want)
		}
		if f := IDField(c.p); f != nil {
			if got := string(f.AppendValue(nil, decode.Value{Kind: decode.KindUint, U: c.id})); got != c.want {
				t.Errorf("%s: field writes %q", f.Name, got)
			}
		}
	}
}
