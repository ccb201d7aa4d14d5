package tui

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/iwkit/iwkit/gen"
)

// TestOpsCompact: the operations the index stores compact (16 octets, the
// rest from their request's row) expand to what it keeps when it stores
// every one whole, over the committed captures and a dense one (every
// frame a whole RDMA Write), where nearly all of them are compact.
func TestOpsCompact(t *testing.T) {
	paths, _ := filepath.Glob("../testdata/siw/*.pcap")
	more, _ := filepath.Glob("../testdata/ulp/*.pcap")
	paths = append(paths, more...)
	dense := genCapture(t, t.TempDir(), "bulk-write", "dense.pcap", gen.Params{Seed: 3, Conns: 2, Count: 2000, Size: 1024})
	for _, sc := range []string{"mixed", "read-heavy", "every-terminate", "hostile"} {
		paths = append(paths, genCapture(t, t.TempDir(), sc, sc+".pcap", gen.Params{Seed: 1, Conns: 2, Count: 40}))
	}
	paths = append(paths, dense)
	ops := func(path string) ([]Op, int) {
		s, err := Open(Config{File: path})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		s.Wait()
		return s.Ix.Ops(), s.Ix.opExt.Len()
	}
	total, compact := 0, 0
	for _, path := range paths {
		got, ext := ops(path)
		compactOps = false
		want, _ := ops(path)
		compactOps = true
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			for i := range want {
				if i >= len(got) || got[i] != want[i] {
					t.Fatalf("%s: operation %d: compact %+v, whole %+v", path, i, got[min(i, len(got)-1)], want[i])
				}
			}
			t.Fatalf("%s: %d operations, want %d", path, len(got), len(want))
		}
		total += len(got)
		compact += len(got) - ext
		if path == dense && (len(got) < 4000 || ext > 10) {
			t.Errorf("dense capture: %d operations, %d kept whole", len(got), ext)
		}
	}
	if compact == 0 || compact == total {
		t.Errorf("%d of %d operations compact: the test proves nothing", compact, total)
	}
	t.Logf("%d of %d operations compact", compact, total)
}
