#!/usr/bin/env bash
# compare.sh: time workspace snapshot and hydrate against Debian's zip and
# unzip on one tree, side by side, then run the Go benchmarks that report
# the peak heap for two tree sizes.
#
#   pkg/workspace/bench/compare.sh [WORKDIR]
#
# Environment: FILES (10000), BYTES (200000000), RUNS (3), BENCHTIME (2x).
# WORKDIR defaults to a new directory under $TMPDIR (or /tmp); it is removed
# at the end unless KEEP=1. Every tool reads and writes under WORKDIR, so
# all of them see the same filesystem. The tools are run interleaved, RUNS
# times each, and the median is reported: wall time, CPU time (user+sys,
# which is what a busy machine distorts least) and peak RSS.
set -euo pipefail

FILES=${FILES:-10000}
BYTES=${BYTES:-200000000}
RUNS=${RUNS:-3}
BENCHTIME=${BENCHTIME:-2x}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)

need_pkgs=()
command -v zip >/dev/null || need_pkgs+=(zip)
command -v unzip >/dev/null || need_pkgs+=(unzip)
[ -x /usr/bin/time ] || need_pkgs+=(time)
if [ ${#need_pkgs[@]} -gt 0 ]; then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	echo "installing ${need_pkgs[*]} with apt-get" >&2
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

BASE=${1:-$(mktemp -d "${TMPDIR:-/tmp}/ws-compare.XXXXXX")}
mkdir -p "$BASE"
BASE=$(cd "$BASE" && pwd)
cleanup() { [ "${KEEP:-0}" = 1 ] || rm -rf "$BASE"; }
trap cleanup EXIT

cd "$REPO"
go build -o "$BASE/gentree" ./pkg/workspace/bench/gentree
go build -o "$BASE/wsbench" ./pkg/workspace/bench/wsbench

# The session bench/bench/s lives in directory DirName("bench", "s").
DIR=$(printf 'bench\0s' | sha256sum | cut -c1-32)
TREE="$BASE/scratch/$DIR"
echo "generating $FILES files, $BYTES bytes in $TREE" >&2
"$BASE/gentree" -files "$FILES" -bytes "$BYTES" "$TREE"
mkdir -p "$BASE/store" "$BASE/target"

TIMES="$BASE/times.tsv"
: >"$TIMES"
# timed LABEL CMD...: run CMD, append "LABEL wall cpu maxrss_kb" to TIMES.
timed() {
	local label=$1
	shift
	/usr/bin/time -o "$BASE/time.out" -f "%e %U %S %M" "$@" >/dev/null
	read -r wall user sys rss <"$BASE/time.out"
	echo "$label $wall $(echo "$user + $sys" | bc) $rss" >>"$TIMES"
}

for run in $(seq "$RUNS"); do
	echo "run $run/$RUNS" >&2
	sync
	rm -f "$BASE/tree.zip"
	timed "zip -r -q" sh -c "cd '$TREE' && zip -r -q '$BASE/tree.zip' ."
	sync
	rm -rf "$BASE/store/v1"
	timed "ws snapshot" "$BASE/wsbench" -op snapshot -scratch "$BASE/scratch" -store "$BASE/store"
	sync
	rm -rf "$BASE/out"
	timed "unzip -q" unzip -q -d "$BASE/out" "$BASE/tree.zip"
	sync
	rm -rf "${BASE:?}/target/$DIR"
	timed "ws hydrate" "$BASE/wsbench" -op hydrate -scratch "$BASE/target" -store "$BASE/store"
done

echo
echo "tree: $FILES files, $(du -sb "$TREE" | cut -f1) bytes; zip archive $(stat -c %s "$BASE/tree.zip") bytes, ws snapshot $(find "$BASE/store" -name 'v-*.data' -printf '%s')" bytes
echo "median of $RUNS runs ($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)):"
printf '%-14s %10s %10s %12s\n' tool wall_s cpu_s max_rss_MB
# median COLUMN LABEL: the median of one column (1 wall, 2 cpu, 3 rss) of
# a tool's rows.
median() {
	grep "^$2 [0-9]" "$TIMES" | sed "s/^$2 //" | cut -d' ' -f"$1" | sort -n |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
for label in "zip -r -q" "ws snapshot" "unzip -q" "ws hydrate"; do
	printf '%-14s %10.2f %10.2f %12.1f\n' "$label" "$(median 1 "$label")" "$(median 2 "$label")" \
		"$(echo "$(median 3 "$label") / 1024" | bc -l)"
done

echo
echo "Go benchmarks (peak heap at three tree sizes, and the tree above):"
TMPDIR="$BASE" WORKSPACE_BENCH_SCRATCH="$BASE/scratch" go test -run '^$' -bench 'Benchmark(Snapshot|Hydrate)' -benchtime "$BENCHTIME" ./pkg/workspace/
