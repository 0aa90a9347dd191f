"""The test suite's own hang and crash reporting under pytest-xdist (tests/conftest.py), as .ci/test.sh runs it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

from conftest import REPO_ROOT, SESSION_MARK


def test_a_hung_test_under_xdist_prints_its_stacks_and_fails_the_run(tmp_path):
    """A worker's stderr is captured and lost: a hang_watchdog dump (then exit 1) must still reach the run's output,
    naming the hung test's frame, and fail the run, with the other worker's tests run and the run ended (no hang)."""
    shutil.copy(REPO_ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_hang.py").write_text(textwrap.dedent("""
        import time
        from conftest import hang_watchdog

        def test_stuck_for_good():
            with hang_watchdog(2):
                time.sleep(60)
        """))
    (tmp_path / "test_fine.py").write_text("def test_fine():\n    assert True\n")
    env = {k: v for k, v in os.environ.items() if k != SESSION_MARK and not k.startswith("PYTEST_")}
    env["TMPDIR"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile",
                           "--max-worker-restart=0", "-p", "no:cacheprovider", str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "worker died: exit status 1" in out and "ERROR: xdist workers ended early" in out, out
    dump = out[out.index("ERROR: xdist workers ended early"):]
    assert "Timeout (0:00:02)!" in dump and 'test_hang.py", line 7 in test_stuck_for_good' in dump, dump
    assert "1 failed, 1 passed" in out, out
    assert not list(tmp_path.glob("paddle_recipes_test_exits_*.log"))  # printed once, then removed
