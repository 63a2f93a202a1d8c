#!/usr/bin/env bash
# cpu.sh: CPU time per call of agentstore mcp servers, measured around the
# server process with /usr/bin/time while the same client as bench.sh
# (client.mjs, the TypeScript SDK, over stdio) makes CALLS calls of one
# tool. CPU time is what the server worked, not how long the client
# waited, so it moves much less than latency when the machine is busy.
# The CPU of starting the server (a run of one call) is subtracted.
#
#   interop/mcp/cpu.sh [CALLS] [SERVER-BINARY ...]   (default: 1000 calls,
#                                                    the binary of this tree)
#
# Prints one line per binary and call: user+system milliseconds per call,
# the voluntary context switches per call (the server's threads going
# to sleep and being woken: each one costs time in this virtual machine)
# and the minor page faults per call (a first touch of a memory page:
# about 16 us each in this virtual machine; docs/performance.md).
# Give two binaries (say, built before and after a change) to compare them
# in one run; they take turns, three rounds.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
calls="${1:-1000}"
shift || true
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  go build -o "$work/agentstore" "$root"
  bins=("$work/agentstore")
fi
mkdir -p "$work/store" "$work/scratch"
dir="$(printf 'agentstore-workspace/2\0a\0u\0s' | sha256sum | cut -c1-32)" # workspace.DirName("a", "u", "s")
ws="$work/scratch/$dir"
mkdir -p "$ws/list1000"
head -c 1024 /dev/zero | tr '\0' 'a' > "$ws/one-kib.txt"
for i in $(seq -f '%04g' 0 999); do echo x > "$ws/list1000/f$i.txt"; done
python3 - "$ws" <<'PY'
import os, sys
line = ("x" * 99 + "\n").encode()
with open(os.path.join(sys.argv[1], "big.log"), "wb") as f:
    for _ in range(100):
        f.write(line * 10000)
PY
content="$(head -c 1024 /dev/zero | tr '\0' 'w')"

cpu() { # cpu BINARY TOOL ARGS N: prints user+system seconds and voluntary context switches of the server
  echo "{\"calls\":[{\"tool\":\"$2\",\"arguments\":$3,\"repeat\":$4}]}" |
    node "$here/client.mjs" --stdio /usr/bin/time -f '%U %S %w %R' -o "$work/time" "$1" mcp \
      --store "$work/store" --scratch "$work/scratch" --app a --user u --session s \
      --snapshot off --memory off > "$work/out.json" 2> "$work/err" || {
    cat "$work/err" >&2
    exit 1
  }
  python3 - "$work/out.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
if r.get("error") or r.get("isError"):
    sys.exit("call failed: %s" % r)
PY
  awk 'END { print $1 + $2, $3, $4 }' "$work/time"
}

for round in 1 2 3; do
  for bin in "${bins[@]}"; do
    for c in "read_text_file 1KiB|read_text_file|{\"path\":\"/workspace/one-kib.txt\"}" \
             "read_text_file tail 100MB|read_text_file|{\"path\":\"/workspace/big.log\",\"tail\":10}" \
             "write_file 1KiB|write_file|{\"path\":\"/workspace/w.txt\",\"content\":\"$content\"}" \
             "list_directory 1000|list_directory|{\"path\":\"/workspace/list1000\"}"; do
      IFS='|' read -r label tool args <<< "$c"
      one=$(cpu "$bin" "$tool" "$args" 1)       # a failed call ends the script (set -e)
      many=$(cpu "$bin" "$tool" "$args" "$calls")
      read -r one vone fone <<< "$one"
      read -r many vmany fmany <<< "$many"
      awk -v r="$round" -v b="$bin" -v l="$label" -v one="$one" -v many="$many" -v vone="$vone" -v vmany="$vmany" -v fone="$fone" -v fmany="$fmany" -v n="$calls" \
        'BEGIN { printf "round %d  %-40s %-26s %.3f ms CPU per call  %.1f context switches per call  %.1f page faults per call\n", r, b, l, (many - one) * 1000 / (n - 1), (vmany - vone) / (n - 1), (fmany - fone) / (n - 1) }'
    done
  done
done
