// Package track follows iWARP connections through the MPA frames and FPDUs
// of both directions and reconstructs what a passive observer can know of
// the RDMA conversation: DDP messages, RDMA operations, STags, Terminates in
// context, statistics, and findings — the receiver checks of
// ../shared/spec/receiver-checks.md that a capture can make. It does no
// I/O and knows nothing of TCP reassembly: a framer (reassembly/, or the
// one in this package's tests) feeds it.
//
// # Input
//
// Every input names its place with an At: connection number, direction
// (I2R from the MPA Initiator, R2I towards it), first and last frame, time,
// and optionally the TCP sequence numbers of the unit and the ACK number of
// the segment that carried its first octet. Without them the tracker still
// runs; the checks that need them (ACK-based MPA start-up order, RD-19,
// RD-22, RD-24, marker positions, CRC retransmissions) are skipped.
//
//	tr := track.New(track.Config{OnFinding: print})
//	tr.Handshake(at, &frame)       // MPA Request / Reply
//	tr.BadFrame(at, err)           // a frame the framer could not parse
//	mark := tr.PDU(at, &pdu)       // one FPDU (decode.PDU, reused by the caller)
//	tr.Gap(at, octets, fpdusLost)  // capture loss in at.Dir
//	tr.Retransmission(at, octets)  // for the statistics
//	tr.MSS(conn, dir, mss)         // for the MULPDU check
//	tr.Close(at, track.CloseFIN)   // FIN or RST sent in at.Dir
//	tr.Finish()                    // end of input
//
// # Output
//
// Findings go to Config.OnFinding as they are raised, in input order (or
// are kept for Findings). Each has a Severity, a stable Code from the
// catalogue in package finding ("ddp.msn_gap"; finding.All lists them with
// the receiver-checks rows they implement), a message citing the rule, the
// connection, direction and frames. Records go
// to OnMessage (every DDP message: complete, incomplete or inconsistent,
// with length and frame range), OnOperation (Writes, Sends, Reads with
// latency, atomics, RTRs, Terminates) and OnTerminate (the Terminate's
// cause in the reading that fits, the frame it blames and a verdict).
// STags lists a connection's STag table; Stats, ConnStats and AllConnStats
// give the statistics; PDU returns Marks (after error, after Terminate,
// uncertain, CRC bad) for the PDU's line.
//
// # What a capture cannot show
//
// Checks that depend on the peer's private state are not made: posted
// receive buffers and their sizes (DDP-04, DDP-07, RD-16), STag tables,
// protection domains and access rights (DDP-09, DDP-12, RD-09, RD-12),
// buffer bounds except those a Read Request itself sets (DDP-10, RD-10
// need ULP buffer advertisements, not parsed here), and the Send Queue
// (RD-23 for SQ work). A Terminate is the peer's verdict on those; the
// tracker links it to the segment it blames and says whether the capture
// supports it. MPA-17 (CRC not negotiated) is a display matter: PDU carries
// the carried and the computed value. DDP-16 (segments after an error) is
// a Mark, not a finding. Checks that need the octet stream itself (a key
// anywhere in the stream, PD_Length against the octets that follow,
// trying marker hypotheses: MPA-01, MPA-04, MPA-19) belong to the framer,
// which reports them through BadFrame and the PDU's markers.
//
// # Uncertainty
//
// After a Gap the affected queues are uncertain: one note says so, MSNs
// and MOs resynchronise on the next message start, Read and Atomic
// Responses may answer requests that were lost (or their own responses may
// have been), IRD accounting pauses, and no error is raised for what the
// loss explains. An ACK that covers octets of the other direction the
// capture never showed has the same effect at once (the framer may report
// that gap later; the later Gap is then not noted twice). An FPDU whose
// CRC failed is one lost FPDU: the next message of each queue may skip one
// MSN. A request, response or Terminate on a wrong queue is reported and
// still matched, so that one bad header does not cascade. A capture that
// starts mid-stream (no MPA exchange) starts uncertain.
//
// # Memory
//
// Everything is bounded by Limits: live connections (closed ones are
// retired first), outstanding Reads and Atomics per direction, STags per
// connection, open tagged messages, the history of sent segments kept to
// link Terminates, findings per code per connection. Overflows are counted
// in the statistics and noted once. Steady-state PDU processing does not
// allocate.
package track
