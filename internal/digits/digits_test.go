package digits

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// values are the edges of every digit count in both bases, and random
// values of every bit length.
func values() []uint64 {
	xs := []uint64{0, math.MaxUint64}
	for p := uint64(1); p <= math.MaxUint64/10; p *= 10 {
		xs = append(xs, p-1, p, p+1, 10*p-1)
	}
	for s := range 64 {
		xs = append(xs, 1<<s-1, 1<<s, 1<<s+1)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for s := 1; s <= 64; s++ {
		for range 50 {
			xs = append(xs, r.Uint64()>>(64-s))
		}
	}
	return xs
}

func TestMatchesStrconv(t *testing.T) {
	for _, x := range values() {
		prefix := []byte("ab")
		if got, want := string(Append(prefix, x)), "ab"+strconv.FormatUint(x, 10); got != want {
			t.Errorf("Append(%d) = %q, want %q", x, got, want)
		}
		if got, want := string(AppendHex(prefix, x)), "ab"+strconv.FormatUint(x, 16); got != want {
			t.Errorf("AppendHex(%d) = %q, want %q", x, got, want)
		}
		for w := 1; w <= 8; w++ {
			y := uint32(x % uint64(pow10[w]))
			if got, want := string(AppendPadded(prefix, y, w)), fmt.Sprintf("ab%0*d", w, y); got != want {
				t.Errorf("AppendPadded(%d, %d) = %q, want %q", y, w, got, want)
			}
		}
		b := make([]byte, 3+20)
		n := Put(b, 3, x)
		if got, want := string(b[3:n]), strconv.FormatUint(x, 10); got != want {
			t.Errorf("Put(%d) = %q, want %q", x, got, want)
		}
		if x > 0 {
			if got, want := Len(x), len(strconv.FormatUint(x, 10)); got != want {
				t.Errorf("Len(%d) = %d, want %d", x, got, want)
			}
		}
	}
}

func FuzzAppend(f *testing.F) {
	for _, x := range []uint64{0, 9, 10, 99, 100, 1e8, math.MaxUint64} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x uint64) {
		if got, want := string(Append(nil, x)), strconv.FormatUint(x, 10); got != want {
			t.Fatalf("Append(%d) = %q, want %q", x, got, want)
		}
		if got, want := string(AppendHex(nil, x)), strconv.FormatUint(x, 16); got != want {
			t.Fatalf("AppendHex(%d) = %q, want %q", x, got, want)
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	buf := make([]byte, 0, 64)
	for i := range b.N {
		buf = Append(buf[:0], uint64(i)*7919)
	}
}

func BenchmarkStrconv(b *testing.B) {
	buf := make([]byte, 0, 64)
	for i := range b.N {
		buf = strconv.AppendUint(buf[:0], uint64(i)*7919, 10)
	}
}
