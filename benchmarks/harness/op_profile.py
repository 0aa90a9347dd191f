"""Run a training script unchanged under paddle's profiler and write its per-operator table (CPU).

    python benchmarks/harness/op_profile.py --out ours.txt -- recipes/ocr_rec.py -c Y.yml -o ...
    cd PaddleOCR && V/bin/python /repo/benchmarks/harness/op_profile.py --out theirs.txt -- tools/train.py -c Y.yml -o ...

The profiler records from the script's start to its exit (model build, data, the train steps; keep eval out of
the run with a large Global.eval_batch_step), so run both sides with the same steps and shapes and compare the
operator rows (calls, total ms): used to find where one trainer's step is slower than the other's (issue 24).
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import runpy
import sys


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="text file for the operator summary")
    p.add_argument("script", nargs=argparse.REMAINDER, help="-- script.py args...")
    a = p.parse_args()
    argv = a.script[1:] if a.script[:1] == ["--"] else a.script
    if not argv:
        p.error("give the script to run after --")
    import paddle.profiler as prof

    profiler = prof.Profiler(targets=[prof.ProfilerTarget.CPU], on_trace_ready=lambda _: None)  # no trace file

    def finish():
        profiler.stop()
        with open(a.out, "w") as f, contextlib.redirect_stdout(f):
            profiler.summary(sorted_by=prof.SortedKeys.CPUTotal, op_detail=False, time_unit="ms",
                             views=[prof.SummaryView.OperatorView, prof.SummaryView.OverView])
        print(f"op_profile: wrote {a.out}", file=sys.stderr)

    sys.argv = argv
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))  # as if the script were run directly
    profiler.start()
    atexit.register(finish)
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
