package gen

import (
	"compress/gzip"
	"io"
	"os"
	"strings"

	"github.com/iwkit/iwkit/pcap"
)

// WriteFile runs sc into the capture file path: pcapng when the name ends
// in .pcapng, else pcap (nanosecond timestamps), gzip-compressed when it
// ends in .gz (see pcap.FormatForName).
func WriteFile(path string, sc *Scenario, opts *Options) (Stats, error) {
	fh, err := os.Create(path)
	if err != nil {
		return Stats{}, err
	}
	var w io.Writer = fh
	var gz *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		gz = gzip.NewWriter(fh)
		w = gz
	}
	st, err := WriteCapture(w, pcap.FormatForName(path), sc, opts)
	for _, f := range []func() error{func() error {
		if gz != nil {
			return gz.Close()
		}
		return nil
	}, fh.Close} {
		if e := f(); err == nil {
			err = e
		}
	}
	return st, err
}
