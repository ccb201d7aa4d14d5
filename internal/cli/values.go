package cli

import (
	"fmt"

	"github.com/iwkit/iwkit/ulp"
)

// DecodeAsValues are the words --decode-as completes to: each storage
// protocol on its well-known port (ulp.WellKnown), PORT=PROTO.
func DecodeAsValues() []string {
	var v []string
	for p := 1; p <= 65535; p++ {
		if pr := ulp.WellKnown(uint16(p)); pr != ulp.None {
			v = append(v, fmt.Sprintf("%d=%s", p, pr))
		}
	}
	return v
}
