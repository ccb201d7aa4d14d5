// Package ulp decodes the storage protocols that ride on iWARP — NVMe over
// Fabrics (RDMA transport), iSER carrying iSCSI, SMB Direct carrying SMB2,
// and RPC-over-RDMA carrying ONC RPC and NFS — and ties each command to the
// RDMA operations that move its data.
//
// It sits above track in the pipeline (DESIGN.md): the caller (package
// analyze) feeds one Conn per iWARP connection with the MPA Request and
// Reply frames and with every decoded DDP segment, in wire order. A Conn
// reassembles untagged Sends itself (track keeps no payload), chooses the
// ULP (forced by the caller, else by the MPA private data, else by the
// responder's port, else by content: shared/spec/ulp-reference.md §5), and
// decodes each complete Send into a Message: the ULP's fields (the field
// table of this package, names prefixed nvme., iser., iscsi., scsi., smbd.,
// smb2., rpcrdma., rpc., nfs.) and a one-line summary.
//
// Linking: the advertiser (NVMe host, iSCSI initiator, SMB client, RPC
// requester) names buffers (STag, offset, length) in its Sends; the
// responder RDMA-Writes into them and RDMA-Reads from them, then answers,
// usually with a Send with Invalidate of the same STag. A Conn keeps a
// bounded table of outstanding tasks and their STags, counts the octets each
// task moved, and reports the task as a Command (with its latency) when its
// response is decoded.
//
// A wrong guess is never an error: a Send the chosen decoder does not
// recognise becomes a Message marked undecoded. Findings are raised only for
// what a passive observer can see, and never above note for the Linux
// habits the reference lists (ulp-reference.md §6, §7).
//
// No I/O; memory is bounded per connection (Limits).
package ulp
