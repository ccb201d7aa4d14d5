#!/bin/bash
# Writes what tshark says about a few small siw captures, the expected
# outputs the tests compare against: for each capture X.pcap in CAPTURES,
#   tshark-VERSION/X.summary.txt    one line per frame (tshark's default output)
#   tshark-VERSION/X.fields.tsv     every MPA/DDP/RDMAP field of every iWARP frame
#   tshark-VERSION/X.crc-status.tsv the CRC of every FPDU whose CRC tshark checks
#   tshark-VERSION/X.expert.txt     tshark's expert information
#   tshark-VERSION/X.json           the full decode of every iWARP frame (the
#                                   smallest captures only: JSON is bulky)
#
#   testdata/siw/make-expected.sh [DEST]   (DEST default: tshark-VERSION here)
# CAPTURES and JSON_CAPTURES (names without .pcap) narrow the set.
#
# Wireshark's Tibia dissector claims tcp/7171-7172, hence --disable-protocol
# tibia; TZ=UTC keeps the JSON's times the same everywhere.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CAPTURES=${CAPTURES:-v1_rping rping crc_rping p2pcrc_rping term_read_badstag term_write_oob}
JSON_CAPTURES=${JSON_CAPTURES:-v1_rping term_read_badstag term_write_oob}
VERSION=$(tshark -v 2>/dev/null | sed -n '1s/^TShark (Wireshark) \([0-9.]*\).*/\1/p')
[ -n "$VERSION" ] || { echo "make-expected.sh: tshark not found" >&2; exit 1; }
DEST=${1:-$HERE/tshark-$VERSION}
mkdir -p "$DEST"
FIELDS="frame.number tcp.stream tcp.srcport tcp.dstport tcp.seq iwarp_mpa.rev iwarp_mpa.marker_flag iwarp_mpa.crc_flag iwarp_mpa.rej_flag iwarp_mpa.res iwarp_mpa.pdlength iwarp_mpa.privatedata iwarp_mpa.ulpdulength iwarp_mpa.pad iwarp_mpa.crc iwarp_mpa.crc_check iwarp_mpa.marker_res iwarp_mpa.marker_fpduptr iwarp_ddp.tagged_flag iwarp_ddp.last_flag iwarp_ddp.rsvd iwarp_ddp.dv iwarp_ddp.rsvdulp iwarp_ddp.stag iwarp_ddp.tagged_offset iwarp_ddp.qn iwarp_ddp.msn iwarp_ddp.mo iwarp_rdma.version iwarp_rdma.rsv iwarp_rdma.opcode iwarp_rdma.reserved iwarp_rdma.inval_stag iwarp_rdma.sinkstag iwarp_rdma.sinkto iwarp_rdma.rdmardsz iwarp_rdma.srcstag iwarp_rdma.srcto iwarp_rdma.term_layer iwarp_rdma.term_etype_rdma iwarp_rdma.term_etype_ddp iwarp_rdma.term_etype_llp iwarp_rdma.term_errcode_rdma iwarp_rdma.term_errcode_ddp_tagged iwarp_rdma.term_errcode_ddp_untagged iwarp_rdma.term_errcode_llp iwarp_rdma.term_hdrct_m iwarp_rdma.hdrct_d iwarp_rdma.hdrct_r iwarp_rdma.term_ddp_seg_len iwarp_rdma.term_ddp_h iwarp_rdma.term_rdma_h iwarp_rdma.atomic.opcode iwarp_rdma.atomic.request_identifier iwarp_rdma.atomic.remote_stag iwarp_rdma.atomic.remote_tagged_offset iwarp_rdma.atomic.add_data iwarp_rdma.atomic.add_mask iwarp_rdma.atomic.swap_data iwarp_rdma.atomic.swap_mask iwarp_rdma.atomic.compare_data iwarp_rdma.atomic.compare_mask iwarp_rdma.atomic.original_request_identifier iwarp_rdma.atomic.original_remote_data_value iwarp_rdma.send.reassembled_in"
export TZ=UTC
ts() { tshark -n --disable-protocol tibia "$@" 2>/dev/null; }
for c in $CAPTURES; do
  f=$HERE/$c.pcap
  ts -r "$f" > "$DEST/$c.summary.txt"
  # shellcheck disable=SC2046
  ts -r "$f" -Y iwarp_mpa -T fields -E header=y -E separator=/t -E occurrence=a -E aggregator=, $(printf -- '-e %s ' $FIELDS) > "$DEST/$c.fields.tsv"
  ts -r "$f" -Y iwarp_mpa.crc_check -T fields -E header=y -E separator=/t -E occurrence=a -E aggregator=, \
    -e frame.number -e iwarp_mpa.crc -e iwarp_mpa.crc_check > "$DEST/$c.crc-status.tsv"
  ts -r "$f" -q -z expert > "$DEST/$c.expert.txt"
done
for c in $JSON_CAPTURES; do
  ts -r "$HERE/$c.pcap" -Y iwarp_mpa -T json > "$DEST/$c.json"
done
echo "tshark $VERSION: $DEST"
