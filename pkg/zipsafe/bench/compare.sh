#!/bin/sh
# Times zipsafe.Write / zipsafe.Extract against Info-ZIP `zip -r -q` and
# `unzip -q` on a generated tree (default 10,000 files, 200 MB) and prints a
# Markdown table. Override with AGENTSTORE_COMPARE_FILES, AGENTSTORE_COMPARE_MB,
# AGENTSTORE_COMPARE_RUNS. The tree goes under $TMPDIR (default /tmp).
#
#   pkg/zipsafe/bench/compare.sh
set -eu
cd "$(dirname "$0")/.."
AGENTSTORE_COMPARE=1 exec go test -count=1 -run '^TestCompareTools$' -v -timeout 60m . "$@"
