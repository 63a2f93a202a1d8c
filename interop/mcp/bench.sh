#!/usr/bin/env bash
# bench.sh: agentstore mcp side by side with the reference filesystem
# server, in one run, with the same client (client.mjs, the TypeScript SDK)
# over stdio and the same files on disk: the reference server's allowed
# directory IS the session's workspace directory of agentstore mcp.
#
#   interop/mcp/bench.sh [REPEAT [WARMUP]]   (default 50 timed calls per
#                                           measurement, no untimed ones)
#
# With WARMUP, each row makes that many untimed calls first (the walks,
# search_files and grep, WARMUP/50), for both servers alike. The client is
# a V8 process, whose own handling of a response runs several times slower
# for its first hundred or so calls (for the 36 KB listing of 1,000
# entries about 1.3 ms a call at first and 0.2 ms once compiled, measured
# against a server that replays canned responses), and so is the
# reference server's handling of a call: WARMUP 100 compares the two
# servers warm, the default cold, as a runtime's first calls see them.
#
# Prints a Markdown table of median and p90 client-side latency per call
# and each server's peak resident memory (from /usr/bin/time) for the
# 1 KiB read and for the tail of the 100 MB file. Needs node, npm ci in
# interop/mcp, and /usr/bin/time.
#
# A third run times the client alone: the same calls against replay.go,
# a server that does no work and answers each request with the line
# agentstore mcp sent for it (captured in an untimed run before). Its
# median is the client's own share of a call (encoding the request, the
# pipe both ways, handling the response), which both servers' medians
# include; the last column divides what is left of each, the servers'
# own parts.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
repeat="${1:-50}"
warmup="${2:-0}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

go build -o "$work/agentstore" "$root"
go build -o "$work/replay" "$here/replay.go"
mkdir -p "$work/store" "$work/scratch"
dir="$(printf 'agentstore-workspace/2\0a\0u\0s' | sha256sum | cut -c1-32)"  # workspace.DirName("a", "u", "s")
ws="$work/scratch/$dir"
mkdir -p "$ws/list1000" "$ws/tree"

# The files: 1 KiB, 100 MB of lines, a directory of 1,000 entries and a
# tree of 10,000 files in 100 directories.
head -c 1024 /dev/zero | tr '\0' 'a' > "$ws/one-kib.txt"
python3 - "$ws" <<'EOF'
import os, sys
ws = sys.argv[1]
line = ("x" * 99 + "\n").encode()
with open(os.path.join(ws, "big.log"), "wb") as f:
    chunk = line * 10000
    for _ in range(100):
        f.write(chunk)
for i in range(1000):
    open(os.path.join(ws, "list1000", "f%04d.txt" % i), "w").write("x\n")
for d in range(100):
    p = os.path.join(ws, "tree", "d%03d" % d)
    os.mkdir(p)
    for i in range(100):
        open(os.path.join(p, "f%03d.%s" % (i, "csv" if i % 10 == 0 else "txt")), "w").write("alpha\nbeta %d\ngamma\n" % i)
EOF

run() { # run NAME ROOT SERVER-COMMAND...
  local name="$1" r="$2"
  shift 2
  local calls
  calls=$(cat <<EOF
{"calls":[
 {"tool":"read_text_file","arguments":{"path":"$r/one-kib.txt"},"repeat":$repeat,"warmup":$warmup},
 {"tool":"read_text_file","arguments":{"path":"$r/big.log","tail":10},"repeat":$repeat,"warmup":$warmup},
 {"tool":"write_file","arguments":{"path":"$r/written.txt","content":"$(head -c 1024 /dev/zero | tr '\0' 'w')"},"repeat":$repeat,"warmup":$warmup},
 {"tool":"list_directory","arguments":{"path":"$r/list1000"},"repeat":$repeat,"warmup":$warmup},
 {"tool":"search_files","arguments":{"path":"$r/tree","pattern":"**/*.csv"},"repeat":$((repeat / 5 + 1)),"warmup":$((warmup / 50))},
 {"tool":"grep","arguments":{"path":"$r/tree","pattern":"beta 7"},"repeat":$((repeat / 5 + 1)),"warmup":$((warmup / 50))}
]}
EOF
)
  echo "$calls" | node "$here/client.mjs" --stdio /usr/bin/time -f "%M" -o "$work/$name.rss" "$@" > "$work/$name.json" 2> "$work/$name.err" || {
    cat "$work/$name.err" >&2
    exit 1
  }
}

run reference "$ws" node "$here/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" "$ws"
ours=("$work/agentstore" mcp --store "$work/store" --scratch "$work/scratch" --app a --user u --session s --snapshot off --memory off)
run agentstore /workspace "${ours[@]}"
# The client alone: capture what agentstore mcp answers (untimed), then
# time the same calls against a server that replays it.
printf '#!/bin/sh\n"$@" | tee %s/replay.jsonl\n' "$work" > "$work/capture.sh"
run capture /workspace sh "$work/capture.sh" "${ours[@]}"
run replay /workspace "$work/replay" "$work/replay.jsonl"

python3 - "$work" "$warmup" <<'EOF'
import json, statistics, sys
work = sys.argv[1]
ref = json.load(open(work + "/reference.json"))
ours = json.load(open(work + "/agentstore.json"))
alone = json.load(open(work + "/replay.json"))
labels = ["read_text_file 1 KiB", "read_text_file tail 10 lines of 100 MB", "write_file 1 KiB (--snapshot off)",
          "list_directory 1,000 entries", "search_files **/*.csv over 10,000 files", "grep over 10,000 files"]
def stat(r):
    if r.get("error") or r.get("isError"):
        return None
    m = sorted(r["micros"])
    return statistics.median(m), m[int(0.9 * (len(m) - 1))]
def fmt(v):
    return "n/a" if v is None else "%.2f ms (p90 %.2f)" % (v[0] / 1000, v[1] / 1000)
print("medians of %d timed calls per row (walks: %d), each row after %s untimed calls (walks: %d)\n" % (
    len(ours["results"][0]["micros"]), len(ours["results"][4]["micros"]), sys.argv[2], int(sys.argv[2]) // 50))
print("| call | reference server | agentstore mcp | speed-up | client alone | servers' own parts |")
print("| --- | --- | --- | --- | --- | --- |")
for i, label in enumerate(labels):
    a, b, c = stat(ref["results"][i]), stat(ours["results"][i]), stat(alone["results"][i])
    su = "%.1fx" % (a[0] / b[0]) if a and b else "(no such tool in the reference)"
    own = "n/a"
    if a and b and c:
        ra, rb = a[0] - c[0], b[0] - c[0]
        own = "%.2f / %.2f ms" % (ra / 1000, rb / 1000) + (", %.1fx" % (ra / rb) if rb > 0 else "")
    elif b and c:
        own = "- / %.2f ms" % ((b[0] - c[0]) / 1000)
    print("| %s | %s | %s | %s | %s | %s |" % (label, fmt(a), fmt(b), su, "%.2f ms" % (c[0] / 1000) if c else "n/a", own))
for name in ("reference", "agentstore"):
    rss = open(work + "/" + name + ".rss").read().strip().splitlines()[-1]
    print("\npeak RSS of the %s server over the whole run: %.1f MiB" % (name, int(rss) / 1024))
EOF
