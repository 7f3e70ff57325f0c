#!/usr/bin/env bash
# Refreshes docs/console.png (the console's overview, embedded in docs/gateway.md) from a run of
# the console's browser test against a built herald: the test writes console.png among its
# screenshots, and only a passing run is copied. Build first (`swift build --product herald`: the
# page is embedded in the binary). Usage: scripts/console-screenshot.sh [path/to/herald]
# (default .build/debug/herald). Needs what the test needs: Chromium at /usr/bin/chromium and
# `pip install playwright cryptography`.
set -euo pipefail
cd "$(dirname "$0")/.."

herald=${1:-.build/debug/herald}
shots=$(mktemp -d)
trap 'rm -rf "$shots"' EXIT

python3 Tests/Browser/console_test.py --herald "$herald" --screenshots "$shots"
cp "$shots/console.png" docs/console.png
echo "docs/console.png: $(wc -c <docs/console.png) bytes"
