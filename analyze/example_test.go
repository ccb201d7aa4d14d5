package analyze_test

import (
	"fmt"
	"log"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/track"
)

// tally is a Consumer: it sees every record of the capture, in capture
// order, on one goroutine, whatever the number of workers.
type tally struct {
	kinds map[analyze.Kind]int
	reads int
}

func (t *tally) Record(r *analyze.Record) {
	t.kinds[r.Kind]++
	if r.Kind == analyze.KindOperation && r.Op.Kind == track.OpRead {
		t.reads++
		if t.reads == 1 {
			fmt.Printf("first Read: conn %d, %d octets, frames %d-%d, %s\n",
				r.Conn.ID, r.Op.Length, r.FirstFrame, r.Frame, analyze.DirName(r.Conn, r.Dir))
		}
	}
}

// Run reads a capture and hands each record to a consumer, in capture
// order. Workers 2 runs the flow-sharded engine: the records, their
// order and the report are those of one worker.
func ExampleRun() {
	src, _, err := analyze.OpenFiles([]string{"../testdata/gen/rping.pcap"})
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	t := &tally{kinds: map[analyze.Kind]int{}}
	rep, err := analyze.Run(src, analyze.Config{Workers: 2}, t)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d PDUs, %d operations (%d Reads), %d findings over %d connection(s)\n",
		t.kinds[analyze.KindPDU], t.kinds[analyze.KindOperation], t.reads, t.kinds[analyze.KindFinding], len(rep.Conns))
	// Output:
	// first Read: conn 1, 64 octets, frames 8-9, r2i
	// 16 PDUs, 12 operations (2 Reads), 2 findings over 1 connection(s)
}
