#!/usr/bin/env bash
# Builds the package and its tests, and fails when the compiler warns about any file of Herald's
# own (under Sources/ or Tests/), printing those warnings. Dependencies' warnings (SwiftPM's notes
# about their unhandled files, anything under .build/) do not count.
#
# A build prints warnings only for the files it compiles, so run it on a clean build (CI's fresh
# clone is one) for the whole list. Extra arguments go to `swift build`, e.g. --scratch-path.
set -uo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
trap 'rm -f "$log"' EXIT

swift build --build-tests "$@" >"$log" 2>&1
status=$?
if [ $status -ne 0 ]; then
    tail -n 50 "$log"
    echo "check-warnings: the build failed (exit $status)" >&2
    exit 1
fi

warnings=$(grep -E '^/.*/(Sources|Tests)/.*warning:' "$log" | grep -v '/\.build/' | sort -u)
if [ -n "$warnings" ]; then
    echo "$warnings"
    echo "check-warnings: $(echo "$warnings" | wc -l) warning(s) in Sources/ or Tests/" >&2
    exit 1
fi
echo "check-warnings: no warnings in Sources/ or Tests/"
