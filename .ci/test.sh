#!/usr/bin/env bash
# The README's tests: the default suite (< 10 min), then the slow tests, both always run; exit 1 if either failed.
# Each suite runs on PYTEST_WORKERS pytest-xdist workers (default 2, the CI machine's cores; a test file stays on one
# worker, so its module fixtures are built once); PYTEST_WORKERS=0 runs in one process.
cd "$(dirname "$0")/.."
# --max-worker-restart=0: a crashed worker is reported (the test it ran fails) and not replaced; with a replacement,
# pytest-xdist's loadfile scheduling waits forever at the end of the run (measured: CI hung after 2 crashes).
workers=(-n "${PYTEST_WORKERS:-2}" --dist loadfile --max-worker-restart=0)
[ "${PYTEST_WORKERS:-2}" = 0 ] && workers=()
python3 -m pytest -q "${workers[@]}"; default=$?
python3 -m pytest -q -m slow "${workers[@]}"; slow=$?
echo "== default suite: rc $default; slow tests: rc $slow; free disk now: $(df -h --output=avail "${TMPDIR:-/tmp}" | tail -1 | tr -d ' ')"
[ "$default" -eq 0 ] && [ "$slow" -eq 0 ]
