package gen

import (
	"path/filepath"
	"testing"

	"github.com/iwkit/iwkit/pcap"
)

// TestWriteFile: the file holds the frames Run made, in the format its
// name asks for, gzip-compressed or not.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.pcap", "b.pcapng", "c.pcapng.gz"} {
		sc, err := Builtin("mixed", Params{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		st, err := WriteFile(path, sc, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := pcap.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var f pcap.Frame
		n := 0
		for r.Next(&f) == nil {
			n++
		}
		r.Close()
		if n != st.Frames || n == 0 || r.Format() != pcap.FormatForName(path) {
			t.Fatalf("%s: %d frames read (%s), %d written", name, n, r.Format(), st.Frames)
		}
	}
}
