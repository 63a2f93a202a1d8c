#!/usr/bin/env bash
# compare.sh: time workspace snapshot and hydrate against Debian's zip and
# unzip, side by side, on trees of the given shapes.
#
#   pkg/workspace/bench/compare.sh [FILES:BYTES ...]
#
# Each argument is a tree shape: FILES files totalling about BYTES bytes
# (word text, see gentree). Without arguments the four shapes of issue 17
# are run: 3000:60000000 20000:20000000 10000:200000000 1000:1000000000
# (the last is 1,000 files of 1 MB).
#
# Needs: go, zip, unzip, GNU time (/usr/bin/time) and bc; missing Debian
# packages are installed with apt-get (as root, or with sudo).
#
# Environment: RUNS (3) timed runs of each tool per shape; WORKDIR (a new
# directory under $TMPDIR or /tmp), removed at the end unless KEEP=1;
# BENCH=1 also runs the Go benchmarks that report the peak heap.
#
# Every tool reads and writes under WORKDIR, so all see the same
# filesystem. The tools run interleaved (zip, snapshot, unzip, hydrate;
# RUNS times), each after a sync, and the median is reported: wall time,
# CPU time (user+sys) and peak RSS, then the ratios zip/snapshot and
# unzip/hydrate (above 1: ours is faster). Both archivers write a new
# archive and both extractors write into a new, empty directory.
#
# Nothing a run wrote is deleted until the end of the script: on ext4
# without a journal, creating a file skips every inode freed in the last
# minute or more, one by one, so a tree created right after another was
# deleted costs several times the CPU, and which tool paid depended on
# what had been deleted just before. So the script needs free space for
# every run's output: about (2 x RUNS + 3) x BYTES per shape, checked at
# the start.
set -euo pipefail

RUNS=${RUNS:-3}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
if [ $# -eq 0 ]; then
	set -- 3000:60000000 20000:20000000 10000:200000000 1000:1000000000
fi
for shape in "$@"; do
	if ! [[ $shape =~ ^[0-9]+:[0-9]+$ ]]; then
		echo "compare.sh: bad shape $shape: want FILES:BYTES, e.g. 3000:60000000" >&2
		exit 2
	fi
done

need_pkgs=()
command -v zip >/dev/null || need_pkgs+=(zip)
command -v unzip >/dev/null || need_pkgs+=(unzip)
command -v bc >/dev/null || need_pkgs+=(bc)
[ -x /usr/bin/time ] || need_pkgs+=(time)
if [ ${#need_pkgs[@]} -gt 0 ]; then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	echo "compare.sh needs ${need_pkgs[*]}: installing with apt-get" >&2
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
command -v go >/dev/null || {
	echo "compare.sh needs the go command" >&2
	exit 1
}

BASE=${WORKDIR:-$(mktemp -d "${TMPDIR:-/tmp}/ws-compare.XXXXXX")}
mkdir -p "$BASE"
BASE=$(cd "$BASE" && pwd)
cleanup() { [ "${KEEP:-0}" = 1 ] || rm -rf "$BASE"; }
trap cleanup EXIT

need=0
for shape in "$@"; do
	need=$((need + (2 * RUNS + 3) * ${shape##*:}))
done
avail=$(($(df -Pk "$BASE" | awk 'NR == 2 { print $4 }') * 1024))
if [ "$avail" -lt "$need" ]; then
	echo "compare.sh: $BASE has $((avail / 1000000)) MB free; the runs keep their outputs until the end and need about $((need / 1000000)) MB: free some space, set WORKDIR to a larger disk, or run fewer shapes or RUNS" >&2
	exit 1
fi

cd "$REPO"
go build -o "$BASE/gentree" ./pkg/workspace/bench/gentree
go build -o "$BASE/wsbench" ./pkg/workspace/bench/wsbench

# The session bench/bench/s lives in directory DirName("bench", "bench", "s").
DIR=$("$BASE/wsbench" -op dir)

# timed FILE LABEL CMD...: run CMD, append "LABEL wall cpu maxrss_kb" to FILE.
timed() {
	local file=$1 label=$2
	shift 2
	/usr/bin/time -o "$BASE/time.out" -f "%e %U %S %M" "$@" >/dev/null
	local wall user sys rss
	read -r wall user sys rss <"$BASE/time.out"
	echo "$label $wall $(echo "$user + $sys" | bc) $rss" >>"$file"
}

# median FILE COLUMN LABEL: the median of one column (1 wall, 2 cpu, 3 rss)
# of a tool's rows.
median() {
	grep "^$3 [0-9]" "$1" | sed "s/^$3 //" | cut -d' ' -f"$2" | sort -n |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

ratio() { echo "scale=2; $1 / $2" | bc -l; }

SUMMARY="$BASE/summary.txt"
: >"$SUMMARY"
echo "$(nproc) CPUs; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for shape in "$@"; do
	files=${shape%%:*}
	bytes=${shape##*:}
	S="$BASE/$files-$bytes"
	TREE="$S/scratch/$DIR"
	echo
	echo "== shape $files files, $bytes bytes: generating in $TREE" >&2
	rm -rf "$S"
	mkdir -p "$S/store"
	"$BASE/gentree" -files "$files" -bytes "$bytes" "$TREE"
	TIMES="$S/times.tsv"
	: >"$TIMES"
	for run in $(seq "$RUNS"); do
		echo "run $run/$RUNS" >&2
		sync
		timed "$TIMES" "zip" sh -c "cd '$TREE' && zip -r -q '$S/tree.$run.zip' ."
		sync
		timed "$TIMES" "snapshot" "$BASE/wsbench" -op snapshot -scratch "$S/scratch" -store "$S/store"
		sync
		timed "$TIMES" "unzip" unzip -q -d "$S/out.$run" "$S/tree.$run.zip"
		mkdir "$S/target.$run"
		sync
		timed "$TIMES" "hydrate" "$BASE/wsbench" -op hydrate -scratch "$S/target.$run" -store "$S/store"
		if ! diff -r -q -x .agentstore-index "$S/out.$run" "$S/target.$run/$DIR" >&2; then
			echo "compare.sh: hydrate and unzip produced different trees" >&2
			exit 1
		fi
	done
	echo "tree: $files files, $(du -sb "$TREE" | cut -f1) bytes; zip archive $(stat -c %s "$S/tree.1.zip") bytes, ws snapshot $(find "$S/store" -name 'v-1.data' -printf '%s') bytes"
	echo "median of $RUNS runs, load average now $(cut -d' ' -f1-3 /proc/loadavg):"
	printf '%-10s %8s %8s %12s\n' tool wall_s cpu_s max_rss_MB
	for label in zip snapshot unzip hydrate; do
		printf '%-10s %8.2f %8.2f %12.1f\n' "$label" "$(median "$TIMES" 1 $label)" "$(median "$TIMES" 2 $label)" \
			"$(echo "$(median "$TIMES" 3 $label) / 1024" | bc -l)"
	done
	zw=$(median "$TIMES" 1 zip) zc=$(median "$TIMES" 2 zip)
	sw=$(median "$TIMES" 1 snapshot) sc=$(median "$TIMES" 2 snapshot)
	uw=$(median "$TIMES" 1 unzip) uc=$(median "$TIMES" 2 unzip)
	hw=$(median "$TIMES" 1 hydrate) hc=$(median "$TIMES" 2 hydrate)
	printf '| %s files, %s MB | %.2f / %.2f | %.2f / %.2f | %.2fx / %.2fx | %.2f / %.2f | %.2f / %.2f | %.2fx / %.2fx | %.0f / %.0f |\n' \
		"$files" "$((bytes / 1000000))" "$zw" "$zc" "$sw" "$sc" "$(ratio "$zw" "$sw")" "$(ratio "$zc" "$sc")" \
		"$uw" "$uc" "$hw" "$hc" "$(ratio "$uw" "$hw")" "$(ratio "$uc" "$hc")" \
		"$(echo "$(median "$TIMES" 3 snapshot) / 1024" | bc -l)" "$(echo "$(median "$TIMES" 3 hydrate) / 1024" | bc -l)" >>"$SUMMARY"
done

echo
echo "Summary (wall s / CPU s; ratios above 1: ours faster; load average now $(cut -d' ' -f1-3 /proc/loadavg)):"
echo "| tree | zip -r | ws snapshot | zip/snapshot | unzip | ws hydrate | unzip/hydrate | peak RSS MB snapshot / hydrate |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
cat "$SUMMARY"

if [ "${BENCH:-0}" = 1 ]; then
	echo
	echo "Go benchmarks (peak heap):"
	TMPDIR="$BASE" go test -run '^$' -bench 'Benchmark(Snapshot|Hydrate)' -benchtime 2x ./pkg/workspace/
fi
