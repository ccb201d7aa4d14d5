#!/usr/bin/env bash
# Runs every iwkit test. Installs what the tests need when it is missing:
# Go modules through the module proxy; tshark/tcpdump (the differential
# oracles), perftest and tcpreplay, tmux and termshark (iwtui's tests and
# benchmarks) from Debian's packages; and the siw VM peer (peers/siw: qemu
# and a Debian guest running Linux soft-iWARP, cached outside the tree).
# Usage: ./test.sh [extra go test flags]
set -euo pipefail
cd "$(dirname "$0")"

need=()
command -v tshark >/dev/null 2>&1 || need+=(tshark)
command -v tcpdump >/dev/null 2>&1 || need+=(tcpdump)
# perftest: iwperf's flag table is checked against ib_write_bw --help;
# tcpreplay: iwreplay's report is checked against tcpreplay's.
command -v ib_write_bw >/dev/null 2>&1 || need+=(perftest)
command -v tcpreplay >/dev/null 2>&1 || need+=(tcpreplay)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v termshark >/dev/null 2>&1 || need+=(termshark)
# groff renders the manual pages (docs/man) with every warning on; zsh
# checks the zsh completion scripts (docs/completion): each command's TestDocs.
command -v groff >/dev/null 2>&1 || need+=(groff-base)
command -v zsh >/dev/null 2>&1 || need+=(zsh)
# python3-distributed: the dask.distributed test (cmd/iwsql TestDask,
# examples/dask) runs a scheduler and two workers on 127.0.0.1.
/usr/bin/python3 -c 'import distributed' >/dev/null 2>&1 || need+=(python3-distributed)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: installing ${need[*]}" >&2
    apt-get update -q >/dev/null
    # tshark asks whether non-root users may capture; answer no, non-interactively.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "test.sh: ${need[*]} missing and cannot install (need root and apt-get); the tests that use them will fail" >&2
  fi
fi

# The siw VM peer that the interop tests boot. build.sh is idempotent: about
# 2 minutes from nothing (debootstrap), under a second when current.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "== siw VM peer: peers/siw/build.sh (image in ${SIW_PEER_CACHE:-/var/tmp/iwkit-siw-peer})"
  if ! peers/siw/build.sh; then
    echo "test.sh: the siw VM peer could not be built (output above); the tests that boot it say why (under CI=true they fail)" >&2
  fi
else
  echo "test.sh: the siw VM peer cannot be built here (needs root and apt-get): TestSiwInterop, TestSiwConform and internal/siwpeer's tests will skip, saying why (under CI=true they fail)" >&2
fi

go mod download
echo "== go vet"
go vet ./...
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt: these files need formatting:"; echo "$unformatted"; exit 1
fi
echo "== go test"
go test -count=1 -timeout 25m "$@" ./...
# The race detector over the packages that run goroutines against each
# other: live capture (pcap), the capture filter shared by several passes
# (pcap/bpf), the endpoint and its servers, the pipeline (live source, the
# flow-sharded engine), render's shared JSON plans, replay, the TUI's
# indexer, iwdump. -short leaves out the siw VM run,
# which the pass above made. Measured on the 2-core test machine under
# load: 166 s of CPU, about 7 minutes of wall clock at load 12 (the tests
# mostly wait on sockets).
echo "== go test -race"
go test -race -short -count=1 -timeout 25m "$@" ./pcap ./pcap/bpf ./capture ./endpoint/... ./analyze ./render ./replay ./tui ./cmd/iwdump
