// Package endpoint is a user-space soft-iWARP endpoint over an ordinary TCP
// connection: MPA connection setup (RFC 5044, enhanced by RFC 6581), DDP
// segmentation and direct placement (RFC 5041), the RDMAP operations (RFC
// 5040) and the receiver checks that answer a faulty peer with the right
// Terminate, behind a verbs-like API modelled on draft-hilland-rddp-verbs-00
// (shared/spec/verbs-digest.md). With QPAttr.RFC7306 a QP also runs the RFC
// 7306 extensions: FetchAdd and CmpSwap atomics and Immediate Data
// (atomic.go).
//
// Resources are created in the verbs order: open a Device, allocate a PD,
// create CQs, create a QP on the PD, register memory (MR, with an STag made of
// a 24-bit index and an 8-bit consumer key), post receives, then connect:
//
//	dev := endpoint.OpenDevice(endpoint.DeviceAttr{})
//	pd := dev.AllocPD()
//	cq, _ := dev.CreateCQ(256)
//	qp, _ := pd.CreateQP(endpoint.QPAttr{SendCQ: cq, RecvCQ: cq})
//	mr, _ := pd.RegisterMR(buf, endpoint.AccessLocalRead|endpoint.AccessLocalWrite|endpoint.AccessRemoteWrite, nil)
//	qp.PostRecv(endpoint.RecvWR{WRID: 1, SGL: []endpoint.SGE{mr.SGE(0, len(buf))}})
//	conn, err := endpoint.Dial(ctx, "tcp", "host:port", qp, &endpoint.Config{CRC: true})
//
// The passive side listens, receives a ConnRequest carrying the peer's MPA
// Request (Private Data, IRD/ORD, requested CRC and markers) and accepts it
// onto a QP or rejects it.
//
// Once a QP is in RTS two goroutines run it: the receive engine reads FPDUs,
// checks each segment (MPA CRC and markers, DDP STag/PD/rights/bounds/MSN/MO,
// RDMAP version/opcode, Read Request validation, IRD), places payload
// directly into registered memory and completes receives and RDMA Reads; the
// send engine segments SQ work requests and Read Responses to MULPDU and
// writes them with one writev per batch. Completions carry status and byte
// counts; the QP follows the verbs state machine (Idle, RTS, Closing,
// Terminate, Error).
//
// The endpoint keeps its own state; of iwkit it uses decode/ for the wire
// codecs, and, to write its own traffic as a capture (Config.Capture),
// internal/frame to build the Ethernet, IP and TCP headers around it and
// pcap/ to write the file: nothing else.
package endpoint
