"""The command line the comparison scripts share: the parser, the run options every comparison takes, PaddleOCR's
checkout, and where a run writes (its report under benchmarks/results/<name>/, its runs under output/bench/)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .ppocr_yaml import parse_set

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"


def parser(doc: str) -> argparse.ArgumentParser:
    """A parser described by a script's docstring: its first line above the options, all of it below."""
    return argparse.ArgumentParser(description=doc.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                   epilog=doc)


def finetune_parser(doc: str, name: str, root: str, steps: int, batch: int) -> argparse.ArgumentParser:
    """The prep / run NAME / report command line of the fine-tune-and-forget scripts: --root, and for run --nproc,
    --steps, --batch (per process), --lr and -o (more recipe keys); each script adds its own."""
    p = parser(doc)
    p.add_argument("what", choices=["prep", "run", "report"])
    p.add_argument("name", nargs="?", default=name, help="run name (run only)")
    p.add_argument("--root", default=root)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--batch", type=int, default=batch)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("-o", nargs="*", default=[], help="more recipe -o keys")
    return p


def run_label(row: dict) -> str:
    """'name (2 proc, 300 steps x 16/card, lr 0.0001)' of a fine-tune results row."""
    return f"{row['name']} ({row['nproc']} proc, {row['steps']} steps x {row['batch_per_card']}/card, lr {row['lr']})"


def add_run_options(p: argparse.ArgumentParser, *, repeats: int, timeout: float, threads_help: str, quick_help: str,
                    repeats_help: str | None = None, timeout_help: str = "seconds per run before it is killed") -> None:
    """--repeats (runs of every row), --threads (math threads per process, default 1), --quick (tiny sizes: checks
    the pipeline only), --timeout (seconds), --out (report folder), --work-dir (scratch folder)."""
    p.add_argument("--repeats", type=int, default=repeats, help=repeats_help)
    p.add_argument("--threads", type=int, default=1, help=threads_help)
    p.add_argument("--quick", action="store_true", help=quick_help)
    p.add_argument("--timeout", type=float, default=timeout, help=timeout_help)
    p.add_argument("--out", default=None, help="report folder (default benchmarks/results/<name>/)")
    p.add_argument("--work-dir", default=None, help="runs and their logs (default output/bench/<name>_<time>/)")


def add_add_to_option(p: argparse.ArgumentParser) -> None:
    """--add-to REPORT_DIR: continue an earlier report of the same command with more seeds."""
    p.add_argument("--add-to", default="", metavar="REPORT_DIR",
                   help="continue an earlier report (its report.json, same command otherwise): its runs count in every "
                        "figure and --repeats more follow with the next seeds (42 + repeats done)")


CONTINUATION_OPTIONS = frozenset({"add_to", "repeats", "out", "work_dir", "timeout"})


def check_add_to(args: argparse.Namespace, parse) -> None:
    """--add-to REPORT_DIR: exit 2 with one line unless REPORT_DIR holds a report.json whose commands (its own and
    those it continued) all parse, with `parse` (the script's parse_args), to `args` in every option but
    CONTINUATION_OPTIONS: more seeds of the same race, never another race mixed into its figures."""
    import json
    import shlex

    if not args.add_to:
        return
    path = Path(args.add_to) / "report.json"
    try:
        rep = json.loads(path.read_text())
        commands = (rep.get("continues") or []) + [rep["command"]]
    except (OSError, ValueError, KeyError) as e:
        sys.stderr.write(f"--add-to {args.add_to}: cannot read the earlier report {path}: {e}\n")
        raise SystemExit(2) from None
    now = vars(args)
    for command in commands:
        try:
            before = vars(parse(shlex.split(command)[2:]))  # "python <script> ..."
        except SystemExit:
            sys.stderr.write(f"--add-to {args.add_to}: its command no longer parses: {command}\n")
            raise SystemExit(2) from None
        differ = [k for k in sorted(set(before) | set(now))
                  if k not in CONTINUATION_OPTIONS and before.get(k) != now.get(k)]
        if differ:
            what = "; ".join(f"--{k.replace('_', '-')} {before.get(k)!r} there, {now.get(k)!r} here" for k in differ)
            sys.stderr.write(f"--add-to {args.add_to}: not the same race ({what}); only "
                             f"{', '.join('--' + k.replace('_', '-') for k in sorted(CONTINUATION_OPTIONS))} may "
                             "differ\n")
            raise SystemExit(2)


def earlier_report(report_dir: str) -> tuple[dict, list | None, int]:
    """--add-to: ({yaml name: {row name: [run records]}}, the commands of that report and of the ones it continued,
    the repeats it holds = seeds 42.. already run); ({}, None, 0) when report_dir is empty."""
    import json

    if not report_dir:
        return {}, None, 0
    rep = json.loads((Path(report_dir) / "report.json").read_text())
    runs = {y["name"]: y["runs"] for y in rep["yamls"]}
    done = max((len(v) for y in runs.values() for v in y.values()), default=0)
    return runs, (rep.get("continues") or []) + [rep["command"]], done


def add_paddleocr_options(p: argparse.ArgumentParser) -> None:
    """--ppocr-src (a PaddleOCR checkout, copied and run as is) and --ppocr-python (the Python that runs it)."""
    p.add_argument("--ppocr-src", default="", help="PaddleOCR source checkout (copied to a scratch dir, run as is)")
    p.add_argument("--ppocr-python", default=sys.executable, help="Python that runs its tools/train.py")


def add_ours_options(p: argparse.ArgumentParser) -> None:
    """--ours-o KEY=VALUE: an -o key for every row of ours only (exact-math switches such as
    Global.cpu_depthwise_kernel=true); PaddleOCR's rows never get it, the report prints it."""
    p.add_argument("--ours-o", action="append", default=[], metavar="KEY=VALUE",
                   help="an -o key for every row of ours (not PaddleOCR's), e.g. Global.cpu_depthwise_kernel=true")


def ours_keys(args: argparse.Namespace, row) -> dict:
    """The --ours-o keys of a row of ours ({} for PaddleOCR's rows)."""
    return dict(parse_set(args.ours_o)) if row.side == "ours" else {}


def ours_o_lines(rep: dict) -> list[str]:
    """The report.md lines naming the --ours-o keys ([] when none)."""
    return [f"Ours' rows also get `-o {' '.join(rep['ours_o'])}` (--ours-o; PaddleOCR's rows do not).", ""] \
        if rep.get("ours_o") else []


def run_dirs(args: argparse.Namespace, name: str) -> tuple[Path, Path]:
    """(report folder, scratch folder) of a run called `name`: --out or benchmarks/results/<name>, and --work-dir
    or output/bench/<name>_<YYYYmmdd_HHMMSS> (absolute)."""
    out_dir = Path(args.out or RESULTS / name)
    work = Path(args.work_dir or REPO / "output" / "bench" / f"{name}_{time.strftime('%Y%m%d_%H%M%S')}").resolve()
    return out_dir, work


def start_run(args: argparse.Namespace, name: str, src: Path, how_to: str) -> tuple[Path, Path, dict]:
    """run_dirs made, and the PaddleOCR checkout `src` copied into the scratch folder (runner.scratch_copy):
    (report folder, scratch folder, the copy's record). SystemExit with the message (and `how_to`) when it cannot."""
    from .runner import scratch_copy

    out_dir, work = run_dirs(args, name)
    out_dir.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    return out_dir, work, scratch_copy(src, work / "PaddleOCR", how_to)
