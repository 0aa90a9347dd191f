"""How often a forked child hangs in OpenCV, with OpenCV's thread pool on and with it serial (cv2.setNumThreads(0)).

A DataLoader worker is a fork of the main process. OpenCV's pthreads pool is not fork-safe: when the main process
has used a parallel cv2 call and a pool thread still holds the pool's lock at the fork, the child blocks forever in
its first parallel cv2 call. LoaderConfig.opencv_num_threads (default 0) makes OpenCV serial before workers fork.

Each trial: the parent runs parallel cv2 calls (warpAffine, resize of a 800x600 image), forks, and the child makes
the same calls and exits; a child not done within --hang-s seconds counts as hung (its stack is saved, it is
killed). The two settings alternate fork by fork (side by side in one run). --load N busy processes compete for the
cores, as the other pytest worker or the training step does (the hang is a scheduling race: rare on an idle box).

    python benchmarks/opencv_fork.py --forks 1500 --load 2
Measures; asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _busy() -> None:
    while True:
        pass


def trial(cv2, img, matrix, hang_s: float, dump: Path | None) -> bool:
    """One fork after parallel cv2 calls in the parent; True when the child hung."""
    for _ in range(2):
        cv2.warpAffine(img, matrix, (800, 600))
        cv2.resize(img, (400, 300))
    pid = os.fork()
    if pid == 0:
        for _ in range(2):
            cv2.warpAffine(img, matrix, (800, 600))
            cv2.resize(img, (400, 300))
        os._exit(0)
    end = time.monotonic() + hang_s
    while time.monotonic() < end:
        if os.waitpid(pid, os.WNOHANG)[0]:
            return False
        time.sleep(0.005)
    if dump is not None and not dump.exists():
        with open(dump, "w") as f:
            subprocess.run(["py-spy", "dump", "--native", "--pid", str(pid)], stdout=f, stderr=subprocess.STDOUT,
                           check=False)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return True


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--forks", type=int, default=1500, help="forks per setting")
    p.add_argument("--load", type=int, default=2, help="busy processes running alongside")
    p.add_argument("--hang-s", type=float, default=5.0, help="seconds after which a child counts as hung")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "cpu_opencv_fork"))
    args = p.parse_args(argv)
    import cv2
    import numpy as np

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    img = rng.integers(0, 255, (600, 800, 3), dtype=np.uint8)
    matrix = np.array([[0.9, 0.1, 5], [-0.1, 0.9, 3]], np.float32)
    default_threads = cv2.getNumThreads()
    settings = {f"pool ({default_threads} threads, OpenCV's default)": -1, "serial (setNumThreads(0))": 0}
    hangs = dict.fromkeys(settings, 0)
    busy = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(args.load)]
    for b in busy:
        b.start()
    t0, load_before = time.time(), os.getloadavg()
    try:
        for i in range(args.forks):
            for name, n in settings.items():
                cv2.setNumThreads(default_threads if n < 0 else n)
                hangs[name] += trial(cv2, img, matrix, args.hang_s, out / "hung_child_stack.txt" if n < 0 else None)
    finally:
        for b in busy:
            b.terminate()
    rep = {"command": " ".join(["python"] + sys.argv), "forks_per_setting": args.forks, "load_processes": args.load,
           "hang_s": args.hang_s, "hangs": hangs, "seconds": round(time.time() - t0, 1),
           "loadavg_before": load_before, "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
           "versions": {"opencv": cv2.__version__, "numpy": np.__version__, "python": platform.python_version()}}
    (out / "report.json").write_text(json.dumps(rep, indent=1))
    lines = ["# Forked children that hang in OpenCV", "", f"Command: `{rep['command']}`", "",
             f"{platform.platform()}, {os.cpu_count()} CPUs, opencv {cv2.__version__}; {args.load} busy processes "
             f"alongside; the settings alternate fork by fork; {rep['seconds']} s.", "",
             "| OpenCV in the parent at fork | forks | children hung |", "|---|---|---|"]
    lines += [f"| {name} | {args.forks} | {n} |" for name, n in hangs.items()]
    if (out / "hung_child_stack.txt").exists():
        lines += ["", "A hung child's stack: `hung_child_stack.txt` (blocked in pthread_mutex_lock under cv2)."]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
