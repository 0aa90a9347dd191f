#!/usr/bin/env bash
# The README's tests: the default suite (< 10 min), then the slow tests, both always run; exit 1 if either failed.
cd "$(dirname "$0")/.."
python3 -m pytest -q; default=$?
python3 -m pytest -q -m slow; slow=$?
echo "== default suite: rc $default; slow tests: rc $slow; free disk now: $(df -h --output=avail "${TMPDIR:-/tmp}" | tail -1 | tr -d ' ')"
[ "$default" -eq 0 ] && [ "$slow" -eq 0 ]
