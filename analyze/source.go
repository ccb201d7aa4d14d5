package analyze

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/iwkit/iwkit/pcap"
)

// Source yields frames in order; Next's frame data is valid until the
// next call. Next returns io.EOF at the end.
type Source interface {
	Next(f *pcap.Frame) error
	Close() error
}

// OpenFiles opens capture files (pcap or pcapng, plain or gzip; "-" is
// standard input); several are merged in time order. total is the sum of
// the file sizes (0 when unknown: stdin), for progress bars.
func OpenFiles(files []string) (src Source, total int64, err error) {
	var rs []*pcap.Reader
	closeAll := func() {
		for _, r := range rs {
			r.Close()
		}
	}
	for _, name := range files {
		r, err := pcap.Open(name)
		if err != nil {
			closeAll()
			return nil, 0, err
		}
		rs = append(rs, r)
		if name != "-" {
			if st, err := os.Stat(name); err == nil && total >= 0 {
				total += st.Size()
			}
		} else {
			total = -1
		}
	}
	if total < 0 {
		total = 0
	}
	if len(rs) == 1 {
		return rs[0], total, nil
	}
	m := &merger{files: files, rs: rs, heads: make([]pcap.Frame, len(rs)), ok: make([]bool, len(rs)), bufs: make([][]byte, len(rs))}
	for i := range rs {
		if err := m.fill(i); err != nil {
			closeAll()
			return nil, 0, err
		}
	}
	return m, total, nil
}

// merger merges several captures by timestamp (ties: the earlier file), as
// mergecap does; frames are numbered in merged order.
type merger struct {
	files []string
	rs    []*pcap.Reader
	heads []pcap.Frame
	ok    []bool
	bufs  [][]byte
	n     int
	out   []byte
}

// fill reads the next frame of file i into its own buffer.
func (m *merger) fill(i int) error {
	err := m.rs[i].Next(&m.heads[i])
	if errors.Is(err, io.EOF) {
		m.ok[i] = false
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", m.files[i], err)
	}
	m.bufs[i] = append(m.bufs[i][:0], m.heads[i].Data...)
	m.heads[i].Data = m.bufs[i]
	m.ok[i] = true
	return nil
}

func (m *merger) Next(f *pcap.Frame) error {
	best := -1
	for i := range m.heads {
		if m.ok[i] && (best < 0 || m.heads[i].Timestamp.Before(m.heads[best].Timestamp)) {
			best = i
		}
	}
	if best < 0 {
		return io.EOF
	}
	*f = m.heads[best]
	m.out = append(m.out[:0], f.Data...)
	f.Data = m.out
	m.n++
	f.Number = m.n
	return m.fill(best)
}

func (m *merger) Close() error {
	for _, r := range m.rs {
		r.Close()
	}
	return nil
}
