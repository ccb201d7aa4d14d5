package gen

import (
	"testing"
	"time"
)

type nullSink struct{ n int }

func (s *nullSink) WriteFrame(ts time.Time, data []byte, origLen int) error { s.n++; return nil }

func TestDbg(t *testing.T) {
	sc, err := Builtin("hostile", Params{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range sc.Impairments {
		one := *sc
		one.Impairments = sc.Impairments[i : i+1]
		var col Collector
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("imp %+v: panic %v", sc.Impairments[i], r)
				}
			}()
			if _, err := Run(&one, &nullSink{}, &Options{Truth: &col}); err != nil {
				t.Errorf("imp %d: %v", i, err)
			}
		}()
	}
}
