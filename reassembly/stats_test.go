package reassembly

import (
	"reflect"
	"testing"
)

// TestStatsAddEveryField fails when a counter is added to Stats but not to
// Stats.Add (sharded programs would silently lose it).
func TestStatsAddEveryField(t *testing.T) {
	var one Stats
	v := reflect.ValueOf(&one).Elem()
	for i := 0; i < v.NumField(); i++ {
		switch f := v.Field(i); f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Uint64:
			f.SetUint(uint64(i + 1))
		default:
			t.Fatalf("Stats.%s: kind %s not handled by this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	sum := one
	sum.Add(one)
	s := reflect.ValueOf(sum)
	for i := 0; i < s.NumField(); i++ {
		var got int64
		if f := s.Field(i); f.CanInt() {
			got = f.Int()
		} else {
			got = int64(f.Uint())
		}
		if got != 2*int64(i+1) {
			t.Errorf("Stats.Add leaves out %s", s.Type().Field(i).Name)
		}
	}
}
