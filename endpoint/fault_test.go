package endpoint

import (
	"testing"
	"time"
)

// The stream-level faults iwconform's suite does not run by default, each
// sent by one iwkit endpoint and caught by another. (The others run in
// endpoint/conform's TestSuiteAgainstIwkit.)
func TestFaultsAgainstIwkit(t *testing.T) {
	cases := []struct {
		name               string
		client, server     Config
		fault              Fault
		layer, etype, code uint8
		anyCode            bool
	}{
		{"fpduptr", Config{Markers: true, CRC: true}, Config{Markers: true, CRC: true},
			Fault{Kind: FaultFPDUPTR, On: OnSend}, 2, 0, 0x03, false},
		{"markers-not-negotiated", Config{CRC: true}, Config{CRC: true},
			Fault{Kind: FaultMarkers, On: OnSend}, 2, 0, 0, true},
		{"rtr-type", Config{PeerToPeer: true, RTR: RTRWrite}, Config{RTR: RTRWrite},
			Fault{Kind: FaultRTRType, On: OnRTR, Value: uint32(rtrSend)}, 2, 0, 0x07, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var data *MR
			cl, sv := connect(t, pairOpts{client: tc.client, server: tc.server,
				clientPrep: func(s *side) {
					data, _ = s.reg(t, 4096, AccessAll)
					if err := s.qp.InjectFault(tc.fault); err != nil {
						t.Fatal(err)
					}
				},
				srvPrep: func(s *side) {
					rb, _ := s.reg(t, 4096, AccessLocalWrite)
					s.qp.PostRecv(RecvWR{WRID: 1, SGL: []SGE{rb.SGE(0, 4096)}})
				}})
			cl.qp.PostSend(SendWR{WRID: 2, Opcode: OpSend, SGL: []SGE{data.SGE(0, 2000)}})
			select {
			case <-sv.qp.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("server still %v", sv.qp.State())
			}
			ti := sv.qp.Terminate()
			if ti == nil || !ti.Local || ti.Cause.Layer != tc.layer || ti.Cause.EType != tc.etype || !tc.anyCode && ti.Cause.Code != tc.code {
				t.Fatalf("server Terminate %+v (err %v)", ti, sv.qp.Err())
			}
			_ = cl
		})
	}
	// InjectFault rejects what is not a fault.
	s := newSide(t, QPAttr{})
	if err := s.qp.InjectFault(Fault{}); err == nil {
		t.Fatal("FaultNone accepted")
	}
}
