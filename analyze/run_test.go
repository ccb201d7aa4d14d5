package analyze

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/track"
)

// describer writes down everything a record says, through its pointers,
// and the frames it is shown: two runs that hand out the same records in
// the same order describe the same.
type describer struct {
	b      strings.Builder
	n      int
	frames int
}

func (d *describer) Frame(fr *pcap.Frame) {
	d.frames++
	fmt.Fprintf(&d.b, "frame %d %d\n", fr.Number, len(fr.Data))
}

func (d *describer) Record(r *Record) {
	d.n++
	b := &d.b
	fmt.Fprintf(b, "%s frame %d %d-%d %s rel %d %s>%s dir %d seq %v %d-%d note %q\n", r.Kind, r.Frame, r.FirstFrame, r.LastFrame,
		r.Time.UTC().Format("15:04:05.000000000"), r.Rel, r.Src, r.Dst, r.Dir, r.HasSeq, r.Seq, r.End, r.Note)
	if r.Conn != nil {
		fmt.Fprintf(b, " conn %+v\n", *r.Conn)
	}
	if r.PDU != nil {
		fmt.Fprintf(b, " pdu %+v\n", *r.PDU)
	}
	if r.Kind == KindFinding {
		fmt.Fprintf(b, " finding %s %s %q\n", r.Finding.Severity, r.Finding.Code, r.Finding.Message)
		if r.Finding.Track != nil {
			fmt.Fprintf(b, " track %+v\n", *r.Finding.Track)
		}
	}
	if r.Op != nil {
		fmt.Fprintf(b, " op %+v stags %+v\n", *r.Op, r.STags())
	}
	if r.Term != nil {
		fmt.Fprintf(b, " term %+v\n", *r.Term)
	}
	if r.Close != nil {
		fmt.Fprintf(b, " close %+v\n", *r.Close)
	}
	if r.Gap != nil {
		fmt.Fprintf(b, " gap %+v\n", *r.Gap)
	}
	if r.Resync != nil {
		fmt.Fprintf(b, " resync %+v\n", *r.Resync)
	}
	if m := r.ULP; m != nil {
		fmt.Fprintf(b, " ulp %s %+v %q\n", m.Proto, m.F, m.Summary)
		if m.Cmd != nil {
			fmt.Fprintf(b, " ulp cmd %+v\n", *m.Cmd)
		}
	}
	if r.Cmd != nil {
		fmt.Fprintf(b, " cmd %+v\n", *r.Cmd)
	}
}

func describe(t *testing.T, files []string, workers int) (*describer, *Report) {
	t.Helper()
	src, _, err := OpenFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	d := &describer{}
	rep, err := Run(src, Config{Workers: workers}, d)
	if err != nil {
		t.Fatal(err)
	}
	return d, rep
}

// Run hands out the records one worker does, in the same order, with the
// same connection numbers, and every frame before its records, whatever
// the number of workers: the shards' copies say all the records they
// copy (PDU octets and decoded fields, findings with their frames,
// operations and their STag ledger entries, ULP messages and commands).
func TestRunSameForAnyWorkers(t *testing.T) {
	records, stags := 0, 0
	for _, name := range captures(t) {
		one, rep := describe(t, []string{name}, 1)
		records += one.n
		stags += strings.Count(one.b.String(), "STag:")
		for _, n := range []int{2, 3} {
			got, rep2 := describe(t, []string{name}, n)
			if got.b.String() != one.b.String() {
				t.Fatalf("%s: %d workers differ from 1:\n%s", name, n, firstDiff([]byte(got.b.String()), []byte(one.b.String())))
			}
			if len(rep2.ConnStats) != len(rep.ConnStats) || rep2.Worst != rep.Worst {
				t.Fatalf("%s: %d workers: report differs", name, n)
			}
		}
	}
	if records == 0 || stags == 0 {
		t.Errorf("%d records, %d STag ledger entries over the committed captures", records, stags)
	}
}

// splitDescriber is a describer that is a Splitter: its preparers write
// the PDU of each PDU record without a ULP message on the shard (and
// take nothing else, after appending octets that must be dropped).
type splitDescriber struct {
	describer
	prepared int // records handed out with Prepared
}

type pduPreparer struct{}

func (pduPreparer) Prepare(r *Record, b []byte) ([]byte, bool) {
	if r.Kind != KindPDU || r.ULP != nil {
		return append(b, "not taken"...), false
	}
	return fmt.Appendf(b, " pdu %+v\n", *r.PDU), true
}

func (s *splitDescriber) Preparer() Preparer { return pduPreparer{} }

func (s *splitDescriber) Record(r *Record) {
	p := r.Prepared
	if p != nil {
		s.prepared++
		if r.Conn == nil {
			s.b.WriteString("a prepared record carries no connection\n")
		}
		if sl := slimmed(r); !reflect.DeepEqual(sl, r) || !reflect.DeepEqual(*sl.Conn, *r.Conn) {
			s.b.WriteString("a prepared record carries more than the Splitter's fields\n")
		}
	} else if r.Kind == KindPDU && r.ULP == nil { // one worker: prepare here
		p, _ = pduPreparer{}.Prepare(r, nil)
		r = slimmed(r)
	}
	s.describer.Record(r)
	s.b.Write(p)
}

// slimmed is what a Splitter's Record gets of a record its preparer
// took (Splitter): the record's place and time, and the connection's
// number, addresses, IWARP, Initiator, LastFrame and LastTime.
func slimmed(r *Record) *Record {
	s := &Record{Kind: r.Kind, Frame: r.Frame, Time: r.Time, Rel: r.Rel, Dir: r.Dir, Src: r.Src, Dst: r.Dst,
		FirstFrame: r.FirstFrame, LastFrame: r.LastFrame, HasSeq: r.HasSeq, Seq: r.Seq, End: r.End, Prepared: r.Prepared}
	if c := r.Conn; c != nil {
		s.Conn = &reassembly.Conn{ID: c.ID, Addr: c.Addr, IWARP: c.IWARP, Initiator: c.Initiator, LastFrame: c.LastFrame, LastTime: c.LastTime}
	}
	return s
}

// A Splitter's records come in the same order, with the same fields, as
// on one worker (where it prepares the records itself and sees what the
// Splitter contract promises of them), whether its preparers took them on
// the shards or not; the records it does not take are a plain consumer's.
func TestRunSplitterSameForAnyWorkers(t *testing.T) {
	for _, name := range captures(t) {
		var ref string
		for _, n := range []int{1, 2, 3} {
			src, _, err := OpenFiles([]string{name})
			if err != nil {
				t.Fatal(err)
			}
			s := &splitDescriber{}
			_, err = Run(src, Config{Workers: n}, s)
			src.Close()
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				ref = s.b.String()
			} else if got := s.b.String(); got != ref {
				t.Fatalf("%s: a Splitter on %d workers differs from 1:\n%s", name, n, firstDiff([]byte(got), []byte(ref)))
			}
			if (n > 1) != (s.prepared > 0) {
				t.Fatalf("%s: %d workers: %d records prepared", name, n, s.prepared)
			}
		}
	}
}

// The latest ledger entry operation records hand out for each connection,
// owner and STag (what iwtui's STags view keeps) is the tracker's own
// table entry at the end of the capture, for every STag an operation
// used: one ledger, track's.
func TestRecordSTagsAreTheTrackersLedger(t *testing.T) {
	compared := 0
	for _, name := range captures(t) {
		src, _, err := OpenFiles([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		latest := map[[3]uint64]track.STagInfo{}
		cfg := Config{}
		rc, lim, keep := cfg.limits(1)
		h := newHandler(consumerFunc(func(r *Record) {
			for _, in := range r.STags() {
				latest[[3]uint64{uint64(r.Op.Conn), uint64(in.Owner), uint64(in.STag)}] = in
			}
		}), lim, keep)
		h.ulpSetup(&cfg)
		err = h.run(src, &cfg, rc)
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
		for k, got := range latest {
			var want *track.STagInfo
			for _, in := range h.t.STags(int(k[0])) {
				if uint64(in.Owner) == k[1] && uint64(in.STag) == k[2] {
					want = &in
				}
			}
			if want == nil {
				continue // the connection was retired: its table is gone
			}
			// Invalidated is cleared by a later advertisement, which is no
			// operation; the rest only an operation changes.
			got.Invalidated = want.Invalidated
			if got != *want {
				t.Errorf("%s: conn %d: records' entry %+v, tracker's %+v", name, k[0], got, *want)
			}
			compared++
		}
		// And every entry of the tracker's tables came with an operation.
		conns := map[uint64]bool{}
		for k := range latest {
			conns[k[0]] = true
		}
		for c := range conns {
			for _, in := range h.t.STags(int(c)) {
				if _, ok := latest[[3]uint64{c, uint64(in.Owner), uint64(in.STag)}]; !ok && in.Uses > 0 {
					t.Errorf("%s: conn %d: tracker's entry %+v came with no operation record", name, c, in)
				}
			}
		}
	}
	if compared == 0 {
		t.Error("no STag ledger entry compared")
	}
}

// Facts that link two connections are the same on any number of workers:
// cxgb4's MPA v2 attempt, reset, and its MPA v1 retry from a new source
// port (mpa.v1_fallback, track/fallback.go) are two flows, which the
// dispatcher would give to two shards; a flow a reset ended keeps its
// shard for the next connection between the same Initiator host and
// Responder listener (dispatcher.shard).
func TestRunFallbackAnyWorkers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fallback.pcap")
	writeGen(t, path, "cxgb4-fallback", gen.Params{Count: 2, Conns: 5})
	one, _ := describe(t, []string{path}, 1)
	if n := strings.Count(one.b.String(), " mpa.v1_fallback \""); n != 5 {
		t.Fatalf("1 worker: %d mpa.v1_fallback findings, want 5", n)
	}
	for _, n := range []int{2, 3, 4} {
		got, _ := describe(t, []string{path}, n)
		if got.b.String() != one.b.String() {
			t.Fatalf("%d workers differ from 1:\n%s", n, firstDiff([]byte(got.b.String()), []byte(one.b.String())))
		}
	}
}

// batcher counts records and batches, and whether the last call was a
// Batch.
type batcher struct {
	records, batches int
	lastBatch        bool
}

func (b *batcher) Record(*Record) { b.records, b.lastBatch = b.records+1, false }
func (b *batcher) Batch()         { b.batches, b.lastBatch = b.batches+1, true }

// A Batcher hears of batches only on several workers, and the last
// record of a sharded run is followed by a Batch.
func TestBatcher(t *testing.T) {
	name := filepath.Join("..", "testdata", "siw", "crc_rping.pcap")
	for _, n := range []int{1, 2, 3} {
		src, _, err := OpenFiles([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		b := &batcher{}
		_, err = Run(src, Config{Workers: n}, b)
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
		if b.records == 0 || (n == 1) != (b.batches == 0) || (n > 1 && !b.lastBatch) {
			t.Errorf("%d workers: %d records, %d batches, last call a Batch: %v", n, b.records, b.batches, b.lastBatch)
		}
	}
}
