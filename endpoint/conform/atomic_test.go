package conform

import (
	"context"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/endpoint/rping"
)

// atomicVerdict is the verdict of an RFC 7306 case against an iwkit
// target with or without the extensions: the cases for the other kind of
// target skip.
func atomicVerdict(id string, rfc7306 bool) (string, bool) {
	if !strings.HasPrefix(id, "rdmap-atomic") && !strings.HasPrefix(id, "rdmap-immediate") {
		return "", false
	}
	if strings.HasSuffix(id, "-unsupported") != rfc7306 {
		return Pass, true
	}
	return Skip, true
}

// The RFC 7306 cases against iwkit targets with and without the
// extensions (iwconform --serve [--rfc7306]): the one without refuses
// with Unexpected OpCode, the one with answers with the right values and
// the RFC's Terminates.
func TestAtomicCases(t *testing.T) {
	for _, ext := range []bool{false, true} {
		t.Run(map[bool]string{false: "without", true: "with"}[ext], func(t *testing.T) {
			addr := serve(t, rping.Options{RFC7306: ext})
			rows, err := Run(context.Background(), Options{Addr: addr, RFC7306: ext, Only: []string{"rdmap-atomic", "rdmap-immediate"}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(atomicCases()) {
				t.Fatalf("%d rows for %d cases", len(rows), len(atomicCases()))
			}
			for _, r := range rows {
				if want, _ := atomicVerdict(r.ID, ext); r.Verdict != want {
					t.Errorf("%s: %s (want %s): sent %s, expected %s, got %s %s", r.ID, r.Verdict, want, r.Sent, r.Expected, r.Got, r.Reason)
				}
			}
		})
	}
}
