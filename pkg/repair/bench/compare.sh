#!/usr/bin/env bash
# compare.sh: time "agentstore fs repair --dry-run" and "agentstore fs verify"
# side by side with find(1) and sha256sum(1) over the same large store.
#
#   pkg/repair/bench/compare.sh DIR [FILES] [RUNS] [PAYLOAD_BYTES]
#
# DIR receives the binaries and, once, the store (DIR/store; reused when it
# exists, so build it once and time it many times). FILES is the number of
# files in name directories (default 1000000: 3 per version, so a third
# are payloads), RUNS the timed repetitions of each command (default 3,
# after one warm-up run: all timings are with a warm page cache),
# PAYLOAD_BYTES the size of every payload (default 4096).
#
# Reported: the best and median wall time of each command and its rate.
# Reported too: the median CPU time (user + sys) of each command. Targets:
# repair scans at least half as many files per second as find lists;
# verify hashes at least 1.6 times the payload bytes per second that
# sha256sum (one process at a time, as xargs runs it) does.
set -euo pipefail

dir=${1:?usage: compare.sh DIR [FILES] [RUNS] [PAYLOAD_BYTES]}
files=${2:-1000000}
runs=${3:-3}
payload=${4:-4096}
top=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
root=$dir/store

(cd "$top" && go build -o "$dir/agentstore" . && go build -o "$dir/gen" ./pkg/repair/bench/gen)
if [ ! -d "$root/v1" ]; then
	echo "== building the store: $files files, $payload-byte payloads"
	"$dir/gen" -files "$files" -payload "$payload" "$root"
fi

nfiles=$(find "$root/v1" -type f | wc -l)
ndata=$(find "$root/v1" -type f -name '*.data' | wc -l)
bytes=$(( ndata * payload ))
echo "== store $root: $nfiles files, $ndata payloads, $bytes payload bytes; $(nproc) CPUs; $runs runs after a warm-up"

# timeit LABEL CMD...: prints best and median wall seconds of $runs runs
# and the median CPU seconds (user + sys, children included).
timeit() {
	local label=$1
	shift
	"$@" >/dev/null 2>&1 || true # warm-up (exit 3 is fine)
	local ts=() cs=()
	for _ in $(seq "$runs"); do
		local s e c0 c1
		c0=$(cpu_ticks)
		s=$(date +%s%N)
		"$@" >/dev/null 2>&1 || true
		e=$(date +%s%N)
		c1=$(cpu_ticks)
		ts+=("$(( (e - s) / 1000000 ))")
		cs+=("$(( (c1 - c0) * 1000 / $(getconf CLK_TCK) ))")
	done
	local sorted
	sorted=$(printf '%s\n' "${ts[@]}" | sort -n)
	best=$(echo "$sorted" | head -n 1)
	median=$(echo "$sorted" | sed -n "$(( (runs + 1) / 2 ))p")
	cpu=$(printf '%s\n' "${cs[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
	printf '%-34s best %7.3f s  median %7.3f s  CPU %7.3f s' "$label" "$(echo "$best / 1000" | bc -l)" "$(echo "$median / 1000" | bc -l)" "$(echo "$cpu / 1000" | bc -l)"
}

# cpu_ticks: user + sys clock ticks of this shell's waited-for children.
cpu_ticks() { awk '{ print $16 + $17 }' /proc/$$/stat; }

rate() { echo "$1 / ($2 / 1000)" | bc -l; }

find_count() { find "$root" -type f | wc -l; }
repair_dry() { "$dir/agentstore" fs repair --store "$root" --dry-run -o json; }
sha_all() { find "$root" -name '*.data' -print0 | xargs -0 sha256sum; }
verify_all() { "$dir/agentstore" fs verify --store "$root" -o json; }

timeit "find ROOT -type f | wc -l" find_count
find_best=$best
printf '  %10.0f files/s\n' "$(rate "$nfiles" "$find_best")"
timeit "agentstore fs repair --dry-run" repair_dry
repair_best=$best
printf '  %10.0f files/s\n' "$(rate "$nfiles" "$repair_best")"
timeit "find -name '*.data' | xargs sha256sum" sha_all
sha_best=$best sha_cpu=$cpu
printf '  %10.1f MiB/s  %8.0f payloads/s\n' "$(echo "$(rate "$bytes" "$sha_best") / 1048576" | bc -l)" "$(rate "$ndata" "$sha_best")"
timeit "agentstore fs verify" verify_all
verify_best=$best
printf '  %10.1f MiB/s  %8.0f payloads/s\n' "$(echo "$(rate "$bytes" "$verify_best") / 1048576" | bc -l)" "$(rate "$ndata" "$verify_best")"

verify_cpu=$cpu
printf '== repair scans at %.0f%% of find'"'"'s rate (target >= 50%%); verify at %.2fx sha256sum'"'"'s rate, best wall (target >= 1.6x), %.2fx its CPU time\n' \
	"$(echo "100 * $find_best / $repair_best" | bc -l)" "$(echo "$sha_best / $verify_best" | bc -l)" "$(echo "$sha_cpu / $verify_cpu" | bc -l)"
echo "== load average now $(cut -d' ' -f1-3 /proc/loadavg)"
