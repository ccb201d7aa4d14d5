package analyze

import (
	"fmt"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/pcap"
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
