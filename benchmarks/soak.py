"""Soak: a long OCR rec run under faults (issue 53 item 5). Not in CI; asserts nothing (never timings).

Two runs of the same job, 2 GLOO processes with DataLoader workers, on a label-file set with bad samples injected at
seeded random lines (corrupt JPEGs and missing files, counted):
  1. undisturbed: a plain `paddle.distributed.launch`;
  2. disturbed: `paddle.distributed.launch --master etcd://... --max_restart 1 --elastic_level 1` (an etcd server on
     loopback, started here; docs/elastic.md) with Global.resume=auto, while this script SIGSTOPs rank 1 for
     --stop-s seconds then SIGCONTs it (at 25 % of the steps), SIGSTOPs a DataLoader worker likewise (at 35 %), and
     kill -9s rank 1 (at 53 %, between two checkpoints): the launcher restarts the job and the recipe resumes from its last checkpoint.
The report (report.json + README.md in --out): per-rank RSS (VmRSS of each rank's main process and with its loader
workers) after the first epoch of each process lifetime vs at its end (goal: <= 10 % growth), the bad samples counted
vs injected (goal: nothing lost beyond them), and whether the final weights (model + EMA) equal the undisturbed run's
bit for bit. The CPU and versions are recorded.

    python benchmarks/soak.py --epochs 300 --out benchmarks/results/soak/cpu_2p   # about --epochs x 2 s per run
Needs Debian's etcd-server and the etcd3 client (pip install 'paddle-recipes[elastic]').
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "recipes" / "configs" / "ocr_rec_smoke.yml"
RECIPE = REPO / "recipes" / "ocr_rec.py"
SMOKE_DATA = REPO / "datasets" / "cache" / "ocr_rec_smoke" / "train"
ETCD_ENV = {"PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python", "GRPC_ENABLE_FORK_SUPPORT": "0"}
MARK = "PADDLE_RECIPES_SOAK_MARK"
STEP_RE = re.compile(r"epoch: \[(\d+)/\d+\], global_step: (\d+),")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PADDLE_TRAINER", "PADDLE_RANK", "PADDLE_LOCAL",
                                                                     "PADDLE_GLOBAL", "PADDLE_MASTER", "PADDLE_NNODES"))}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(extra or {})
    return env


def make_data(root: Path, lines: int, bad_frac: float, seed: int) -> dict:
    """A label-file set of `lines` lines drawn from the smoke set's images, `bad_frac` of them bad (half corrupt
    JPEGs, half missing files) at seeded random lines. Returns {"lines", "corrupt_image", "missing_image"}."""
    if not (SMOKE_DATA / "label.txt").exists():  # the smoke recipe generates its set on first use
        subprocess.run([sys.executable, str(RECIPE), "-c", str(SMOKE), "-o", f"Global.output_dir={root / 'gen'}",
                        "Global.max_steps=1", "Global.eval_every_epochs=0", "Global.save_every_epochs=0"],
                       cwd=REPO, env=_env(), check=True, capture_output=True)
    good = [ln.split("\t", 1) for ln in (SMOKE_DATA / "label.txt").read_text(encoding="utf-8").splitlines() if ln]
    shutil.rmtree(root / "images", ignore_errors=True)
    shutil.copytree(SMOKE_DATA / "images", root / "images")
    rng = random.Random(seed)
    bad_at = set(rng.sample(range(lines), int(round(lines * bad_frac))))
    out, counts = [], {"lines": lines, "corrupt_image": 0, "missing_image": 0}
    for i in range(lines):
        if i in bad_at and rng.random() < 0.5:
            name = f"images/corrupt_{i:06d}.jpg"
            (root / name).write_bytes(b"\xff\xd8 not a jpeg " + bytes(rng.getrandbits(8) for _ in range(64)))
            out.append(f"{name}\t{good[i % len(good)][1]}")
            counts["corrupt_image"] += 1
        elif i in bad_at:
            out.append(f"images/missing_{i:06d}.jpg\t{good[i % len(good)][1]}")
            counts["missing_image"] += 1
        else:
            path, label = good[rng.randrange(len(good))]
            out.append(f"{path}\t{label}")
    (root / "train.txt").write_text("\n".join(out) + "\n", encoding="utf-8")
    return counts


def recipe_args(data: Path, out: Path, epochs: int, workers: int, extra: list[str] = ()) -> list[str]:
    ds = [f"data_dir={data}", "format=label_file", f"label_file_list=[{data / 'train.txt'}]"]
    return [str(RECIPE), "-c", str(SMOKE), "-o", f"Global.output_dir={out}", f"Global.epochs={epochs}",
            "Global.save_every_steps=10", "Global.eval_every_epochs=0", "Global.save_every_epochs=1",
            "Global.log_every=1", "Global.resume=auto", f"Train.loader.num_workers={workers}",
            *[f"Train.dataset.{x}" for x in ds], *extra]


def _proc_table() -> dict[int, tuple[int, dict, bytes]]:
    """{pid: (ppid, environ, cmdline)} of readable processes."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, IndexError, ValueError):
            continue
        table[int(entry)] = (ppid, env, cmd)
    return table


def ranks(mark: str) -> dict[int, dict]:
    """{rank: {"pid": main pid, "loaders": [DataLoader worker pids]}} of the live ranks carrying `mark`."""
    table = _proc_table()
    mine = {p: v for p, v in table.items() if v[1].get(MARK.encode()) == mark.encode() and b"ocr_rec.py" in v[2]
            and b"PADDLE_TRAINER_ID" in v[1]}
    out = {}
    for pid, (ppid, env, _) in mine.items():
        if ppid not in mine:  # a rank: its parent is the launcher; a loader worker's parent is its rank
            out[int(env[b"PADDLE_TRAINER_ID"])] = {"pid": pid, "loaders": [c for c, v in mine.items() if v[0] == pid]}
    return out


def rss_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def last_step(log: Path) -> tuple[int, int]:
    """(epoch, global_step) of the last step line in rank 0's log (0, 0 before the first)."""
    found = STEP_RE.findall(log.read_text(errors="replace")) if log.exists() else []
    return (int(found[-1][0]), int(found[-1][1])) if found else (0, 0)


class Monitor(threading.Thread):
    """Samples every rank's RSS each `every` s; per process lifetime (rank, pid) keeps the samples with the epoch
    rank 0's log is in, so the first-epoch and last readings can be picked out afterwards."""

    def __init__(self, mark: str, log: Path, every: float = 2.0):
        super().__init__(daemon=True)
        self.mark, self.log, self.every = mark, log, every
        self.samples: dict[str, list] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            epoch, step = last_step(self.log)
            for r, info in ranks(self.mark).items():
                main = rss_mib(info["pid"])
                if main is None:
                    continue
                loaders = sum(x for x in (rss_mib(p) for p in info["loaders"]) if x is not None)
                self.samples.setdefault(f"rank{r}:pid{info['pid']}", []).append(
                    {"t": round(time.time(), 1), "epoch": epoch, "step": step, "rss_mib": round(main, 1),
                     "with_loaders_mib": round(main + loaders, 1), "loaders": len(info["loaders"])})
            self.stop.wait(self.every)


def rss_report(samples: dict[str, list]) -> dict:
    """Per process lifetime: RSS at the first sample of its second epoch (after its first epoch) vs its last one."""
    out = {}
    for key, rows in samples.items():
        first_epoch = rows[0]["epoch"]
        after = next((r for r in rows if r["epoch"] >= first_epoch + 2), None)  # log epoch is 1-based, running
        end = rows[-1]  # the last reading, which may fall after the loader workers have ended (final eval)
        end_loaders = next((r for r in reversed(rows) if r["loaders"] == (after or {}).get("loaders")), end)
        if after is None:
            out[key] = {"samples": len(rows), "note": "ended within its first epoch"}
            continue
        out[key] = {"samples": len(rows), "after_first_epoch": after, "end": end,
                    "growth_pct": round(100 * (end["rss_mib"] / after["rss_mib"] - 1), 2),
                    "end_with_loaders": end_loaders,  # the last reading with as many loader workers as `after`
                    "growth_with_loaders_pct": round(100 * (end_loaders["with_loaders_mib"] / after["with_loaders_mib"]
                                                            - 1), 2),
                    "max_rss_mib": max(r["rss_mib"] for r in rows)}
    return out


def weights(out: Path) -> dict:
    import paddle  # only for reading the weights at the end

    folder = out / "checkpoints" / (out / "checkpoints" / "latest").read_text().strip()
    return {f"{f}:{k}": np.asarray(v) for f in ("model.pdparams", "ema.pdparams")
            for k, v in paddle.load(str(folder / f)).items()}


def start_etcd(work: Path) -> tuple[subprocess.Popen, str]:
    exe = shutil.which("etcd")
    if exe is None:
        sys.exit("soak: error: no etcd binary (Debian: apt-get install etcd-server)")
    client, peer = _free_port(), _free_port()
    log = work / "etcd.log"
    proc = subprocess.Popen([exe, "--data-dir", str(work / "etcd"), "--listen-client-urls", f"http://127.0.0.1:{client}",
                             "--advertise-client-urls", f"http://127.0.0.1:{client}", "--listen-peer-urls",
                             f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                             "--initial-cluster", f"default=http://127.0.0.1:{peer}"],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT)
    deadline = time.time() + 30
    while "ready to serve client requests" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            sys.exit("soak: error: etcd did not start: " + log.read_text(errors="replace")[-500:])
        time.sleep(0.2)
    return proc, f"etcd://127.0.0.1:{client}"


FAULTS = {"sigstop_rank1": 0.25, "sigstop_loader": 0.35, "kill9_rank1": 0.53}


def run_job(cmd: list[str], env: dict, log_dir: Path, mark: str, total_steps: int | None, stop_s: float,
            events: list, faults: tuple = tuple(FAULTS)) -> tuple[int, float, dict, str]:
    """Run one launcher; with total_steps, inject `faults` at their fraction of the steps (FAULTS: 25 / 35 / 53 %)."""
    mon = Monitor(mark, log_dir / "workerlog.0")
    t0 = time.time()
    launcher = subprocess.Popen(cmd, cwd=REPO, env={**env, MARK: mark}, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
    mon.start()
    # the kill falls between two checkpoints (every 10 steps), so the restarted run redoes some steps
    plan = [] if total_steps is None else [(FAULTS[f], f) for f in FAULTS if f in faults]
    out_lines: list[str] = []
    looking = 0.0  # until when to look for a live loader worker to stop
    reader = threading.Thread(target=lambda: out_lines.extend(launcher.stdout), daemon=True)
    reader.start()
    try:
        while launcher.poll() is None:
            if plan:
                epoch, step = last_step(log_dir / "workerlog.0")
                frac, what = plan[0]
                live = ranks(mark)
                if step >= frac * total_steps and 1 in live:
                    target = live[1]["pid"] if what != "sigstop_loader" else (live[1]["loaders"] or [None])[0]
                    if target is None and time.time() < (looking := looking or time.time() + 60):
                        time.sleep(0.05)  # loader workers are forked anew each epoch: catch one alive
                        continue
                    plan.pop(0)
                    looking = 0.0
                    events.append({"t": round(time.time() - t0, 1), "step": step, "event": what, "pid": target})
                    if target is None:
                        events[-1]["note"] = "no loader worker found"
                    elif what == "kill9_rank1":
                        os.kill(target, signal.SIGKILL)
                    else:
                        os.kill(target, signal.SIGSTOP)
                        time.sleep(stop_s)
                        os.kill(target, signal.SIGCONT)
                        events.append({"t": round(time.time() - t0, 1), "event": what.replace("stop", "cont"),
                                       "pid": target})
            time.sleep(0.5)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait()
        reader.join(timeout=10)
        mon.stop.set()
        mon.join()
    return launcher.returncode, time.time() - t0, mon.samples, "".join(out_lines)


def versions() -> dict:
    import paddle  # recorded only

    cpu = next((ln.split(":", 1)[1].strip() for ln in subprocess.run(["lscpu"], capture_output=True, text=True)
                .stdout.splitlines() if ln.startswith("Model name")), platform.processor())
    etcd = subprocess.run(["etcd", "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "paddle": paddle.__version__,
            "etcd": etcd[0] if etcd else "", "platform": platform.platform(),
            "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                     text=True).stdout.strip()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=900, help="epochs of each run (about 2 s each on 2 shared AMD EPYC cores: 900 = 30 min)")
    ap.add_argument("--lines", type=int, default=96, help="label-file lines (bad ones included)")
    ap.add_argument("--bad-frac", type=float, default=0.08)
    ap.add_argument("--workers", type=int, default=1, help="DataLoader workers per rank")
    ap.add_argument("--stop-s", type=float, default=8.0, help="seconds a SIGSTOPped process stays stopped")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True, help="report folder (report.json, README.md)")
    ap.add_argument("--work-dir", type=Path, default=None, help="runs and data (default: a temp folder)")
    ap.add_argument("--faults", default=",".join(FAULTS), help=f"comma list of {', '.join(FAULTS)} (the RSS study: "
                    "sigstop_rank1 alone; without kill9_rank1 the disturbed run is a plain launch, no etcd)")
    ap.add_argument("--steps", type=int, default=None, help="without an undisturbed run (--faults only, no weights "
                    "compared): the steps the fault fractions refer to (epochs x 2 with the default set)")
    ap.add_argument("-o", dest="overrides", nargs="*", default=[], help="extra recipe -o overrides for both runs, "
                    "e.g. Train.loader.allocator_keep_mb=0")
    args = ap.parse_args(argv)
    faults = tuple(f for f in args.faults.split(",") if f)
    unknown = set(faults) - set(FAULTS)
    if unknown:
        ap.error(f"--faults: unknown {sorted(unknown)}; known: {', '.join(FAULTS)}")
    work = args.work_dir or Path(os.environ.get("TMPDIR", "/tmp")) / f"soak-{uuid.uuid4().hex[:8]}"
    work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    data = work / "data"
    data.mkdir(exist_ok=True)
    injected = make_data(data, args.lines, args.bad_frac, args.seed)
    report = {"args": {k: str(v) for k, v in vars(args).items()}, "versions": versions(), "injected": injected}
    launch = [sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", "2"]

    events: list = []
    if args.steps is None:
        rc, secs, samples, _ = run_job([*launch, "--log_dir", str(work / "ref_log"),
                                        *recipe_args(data, work / "ref", args.epochs, args.workers, args.overrides)],
                                       _env(), work / "ref_log", uuid.uuid4().hex, None, args.stop_s, events)
        ref_summary = json.loads((work / "ref" / "summary.json").read_text()) if rc == 0 else {}
    else:  # the RSS study: the disturbed run only
        rc, secs, samples, ref_summary = None, 0.0, {}, {"global_step": args.steps}
    report["undisturbed"] = {"rc": rc, "seconds": round(secs, 1), "global_step": ref_summary.get("global_step"),
                             "skipped": ref_summary.get("skipped", {}), "rss": rss_report(samples)}
    total = ref_summary.get("global_step") or 0
    print(f"soak: undisturbed run rc {rc}, {secs:.0f} s, {total} steps", flush=True)

    restart = "kill9_rank1" in faults
    etcd, master = start_etcd(work) if restart else (None, "")
    try:
        mark = uuid.uuid4().hex
        elastic = ["--master", master, "--nnodes", "1", "--job_id", f"soak-{mark[:8]}", "--max_restart", "1",
                   "--elastic_level", "1"] if restart else []
        rc2, secs2, samples2, launcher_out = run_job(
            [*launch, *elastic, "--log_dir", str(work / "log"),
             *recipe_args(data, work / "healed", args.epochs, args.workers, args.overrides)],
            _env(ETCD_ENV if restart else None), work / "log", mark, total, args.stop_s, events, faults)
    finally:
        if etcd is not None:
            etcd.kill()
            etcd.wait()
    (args.out / "samples.json").write_text(json.dumps({"undisturbed": samples, "disturbed": samples2}))
    healed_summary = json.loads((work / "healed" / "summary.json").read_text()) if rc2 == 0 else {}
    (work / "launcher.txt").write_text(launcher_out)
    report["disturbed"] = {"rc": rc2, "seconds": round(secs2, 1), "events": events,
                           "pod_runs": launcher_out.count("Run Pod"), "global_step": healed_summary.get("global_step"),
                           "skipped": healed_summary.get("skipped", {}), "rss": rss_report(samples2),
                           "resumed": re.findall(r"resumed from \S+ at epoch \d+, batch \d+, global_step \d+",
                                                 (work / "log" / "workerlog.0").read_text(errors="replace"))}
    if rc == 0 and rc2 == 0:
        a, b = weights(work / "ref"), weights(work / "healed")
        differ = [k for k in a if k not in b or not np.array_equal(a[k], b[k])]
        report["weights"] = {"tensors": len(a), "differ": differ[:10], "bit_exact": not differ and a.keys() == b.keys()}
    bad = injected["corrupt_image"] + injected["missing_image"]
    for run in ("undisturbed", "disturbed"):
        counted = report[run]["skipped"].get("Train.dataset", {})
        report[run]["bad_counted"] = sum(v for k, v in counted.items() if isinstance(v, int))
        report[run]["lost_beyond_bad"] = None if not counted else report[run]["bad_counted"] - bad
    (args.out / "report.json").write_text(json.dumps(report, indent=1))
    (args.out / "README.md").write_text(render(report))
    print((args.out / "README.md").read_text())
    return 0


def _flags(args: dict) -> str:
    return " ".join(f"--{k.replace('_', '-')} {x}" for k, x in args.items() if k != "work_dir" and x != "None")


def render(r: dict) -> str:
    v, u, d = r["versions"], r["undisturbed"], r["disturbed"]
    lines = ["# Soak: OCR rec, 2 GLOO processes, faults injected (benchmarks/soak.py)", "",
             f"CPU: {v['cpu']} ({v['cores']} cores, shared with other jobs); python {v['python']}, paddle {v['paddle']}, "
             f"{v['etcd']}; commit {v['commit']}.", "",
             f"Command: `python benchmarks/soak.py {_flags(r['args'])}`",
             "", f"Injected bad lines: {r['injected']}", "",
             "| run | rc | wall s | steps | bad counted | lost beyond bad | restarts |", "|---|---|---|---|---|---|---|",
             f"| undisturbed | {u['rc']} | {u['seconds']} | {u['global_step']} | {u['bad_counted']} | {u['lost_beyond_bad']} | 0 |",
             f"| disturbed | {d['rc']} | {d['seconds']} | {d['global_step']} | {d['bad_counted']} | {d['lost_beyond_bad']} | "
             f"{max(d['pod_runs'] - 1, 0)} |", "",
             f"Final weights (model + EMA) equal bit for bit: **{r.get('weights', {}).get('bit_exact')}** "
             f"({r.get('weights', {}).get('tensors')} tensors).", "", "Events (s from launch, step): " +
             "; ".join(f"{e['event']} @ {e['t']} s" + (f" step {e['step']}" if 'step' in e else "")
                       + (f" ({e['note']})" if 'note' in e else "") for e in d["events"]),
             "", f"Resumed: {d['resumed']}", "",
             "RSS per process lifetime (MiB, VmRSS of the rank's main process, sampled every 2 s; after the 1st epoch = the "
             "first reading at least one epoch after the process's first step; +loaders = with its DataLoader workers, "
             "up to the last reading that still had them):", "",
             "| run | process | after 1st epoch | end | growth % | growth % (+loaders) | max |", "|---|---|---|---|---|---|---|"]
    for run, rows in (("undisturbed", u["rss"]), ("disturbed", d["rss"])):
        for key, x in rows.items():
            if "end" not in x:
                lines.append(f"| {run} | {key} | {x['note']} | | | | |")
                continue
            lines.append(f"| {run} | {key} | {x['after_first_epoch']['rss_mib']} (epoch {x['after_first_epoch']['epoch']}) "
                         f"| {x['end']['rss_mib']} (epoch {x['end']['epoch']}) | {x['growth_pct']} | "
                         f"{x['growth_with_loaders_pct']} | {x['max_rss_mib']} |")
    lines += ["", "Goals (issue 53): RSS growth <= 10 %, 0 samples lost beyond the counted bad ones, final weights equal. "
              "Wall times are recorded, never asserted (a shared machine)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
