package main

import (
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/filter"
	"github.com/iwkit/iwkit/track"
)

// record is what the display filter sees: a PDU, or a finding (from the
// tracker or the reassembler).
type record struct {
	pdu     *decode.PDU
	finding *track.Finding
}

// findingFields are the filter fields of findings.
var findingFields = map[string]filter.Getter[*record]{
	"finding.severity": func(r *record) (decode.Value, bool) {
		if r.finding == nil {
			return decode.Value{}, false
		}
		return decode.Value{Kind: decode.KindString, S: r.finding.Severity.String()}, true
	},
	"finding.code": func(r *record) (decode.Value, bool) {
		if r.finding == nil {
			return decode.Value{}, false
		}
		return decode.Value{Kind: decode.KindString, S: r.finding.Code.String()}, true
	},
	"finding.message": func(r *record) (decode.Value, bool) {
		if r.finding == nil {
			return decode.Value{}, false
		}
		return decode.Value{Kind: decode.KindString, S: r.finding.Message}, true
	},
	"finding": func(r *record) (decode.Value, bool) {
		return decode.Value{Kind: decode.KindBool, U: 1}, r.finding != nil
	},
}

// resolveField serves the decode field table and the finding fields.
func resolveField(name string) (filter.Getter[*record], decode.FieldKind, bool) {
	if g, ok := findingFields[name]; ok {
		kind := decode.KindString
		if name == "finding" {
			kind = decode.KindBool
		}
		return g, kind, true
	}
	f, ok := decode.FieldByName(name)
	if !ok {
		return nil, 0, false
	}
	return func(r *record) (decode.Value, bool) {
		if r.pdu == nil {
			return decode.Value{}, false
		}
		return f.Get(r.pdu)
	}, f.Kind, true
}
