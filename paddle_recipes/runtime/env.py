"""Environment report: what paddle sees on this machine, plus advice on known mismatches.

    python -m paddle_recipes.runtime.env                 # human-readable report + paddle.utils.run_check()
    python -m paddle_recipes.runtime.env --json --no-run-check

``collect_env()`` returns the same facts as a JSON-serializable dict (stored with benchmarks).
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from importlib import metadata

__all__ = ["collect_env", "advise", "format_report", "main"]

# distribution names tried for each reported package (first installed wins)
_PACKAGES = {
    "numpy": ["numpy"],
    "opencv": ["opencv-python-headless", "opencv-python", "opencv-contrib-python-headless",
               "opencv-contrib-python"],
    "albumentations": ["albumentations"],
    "paddlenlp": ["paddlenlp"],
    "lmdb": ["lmdb"],
    "pillow": ["pillow"],
    "visualdl": ["visualdl"],
}
_DIST_ENV = ["PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_ID", "PADDLE_RANK_IN_NODE", "PADDLE_LOCAL_RANK",
             "PADDLE_GLOBAL_SIZE", "PADDLE_LOCAL_SIZE", "PADDLE_MASTER", "PADDLE_TRAINER_ENDPOINTS"]
_FLAGS = ["FLAGS_cudnn_deterministic", "FLAGS_conv_workspace_size_limit", "FLAGS_cudnn_exhaustive_search",
          "FLAGS_fraction_of_gpu_memory_to_use", "FLAGS_allocator_strategy", "FLAGS_enable_pir_api"]
SHM_ADVICE_MB = 1024


def _version_str(v) -> str | None:
    """paddle.version.cuda()/cudnn() return False on CPU builds, nccl() "0", tensorrt() "None"."""
    if v is False or v is None or str(v) in ("False", "None", "0", ""):
        return None
    return str(v)


def _pkg_version(names: list[str]) -> str | None:
    for n in names:
        try:
            return metadata.version(n)
        except metadata.PackageNotFoundError:
            continue
    return None


# distributions that install the same top-level module: two of them overwrite each other's files
_SAME_MODULE = {"cv2": _PACKAGES["opencv"], "paddle": ["paddlepaddle", "paddlepaddle-gpu"]}


def _installed_dists(names: list[str]) -> dict:
    """{distribution: version} of those of ``names`` that are installed."""
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            continue
    return out


def _nvidia_smi() -> dict | None:
    """Driver version and the CUDA version the driver supports, from nvidia-smi (None if absent)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe], capture_output=True, text=True, timeout=15).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return {"error": str(exc)}
    drv = re.search(r"Driver Version:\s*([\d.]+)", out)
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", out)
    return {"driver_version": drv.group(1) if drv else None,
            "driver_cuda_version": cuda.group(1) if cuda else None}


def _find_libs(pattern: str) -> list[str]:
    """Files matching `pattern` (e.g. libcudnn.so*) in LD_LIBRARY_PATH dirs and the pip nvidia wheels."""
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    dirs += glob.glob(os.path.join(sys.prefix, "lib", "python*", "site-packages", "nvidia", "*", "lib"))
    found = []
    for d in dirs:
        found += glob.glob(os.path.join(d, pattern))
    return sorted(set(found))


def _shm() -> dict | None:
    if not os.path.isdir("/dev/shm"):
        return None
    u = shutil.disk_usage("/dev/shm")
    return {"total_mb": round(u.total / 2**20), "free_mb": round(u.free / 2**20)}


def _run_check() -> dict:
    buf = io.StringIO()
    try:
        import paddle

        with contextlib.redirect_stdout(buf):
            paddle.utils.run_check()
        return {"ok": True, "output": buf.getvalue().strip()}
    except Exception as exc:  # report, don't crash the report
        return {"ok": False, "output": buf.getvalue().strip(), "error": f"{type(exc).__name__}: {exc}"}


def collect_env(run_check: bool = False) -> dict:
    """Facts about python, paddle, devices, distributed env, shm, packages and AMP (JSON-serializable).

    ``run_check=True`` also runs ``paddle.utils.run_check()`` (a few seconds) and stores its result.
    """
    import paddle

    cuda_built = bool(paddle.is_compiled_with_cuda())
    gpu_count = int(paddle.device.cuda.device_count()) if cuda_built else 0
    gpus = []
    for i in range(gpu_count):
        try:
            cap = paddle.device.cuda.get_device_capability(i)
            gpus.append({"id": i, "name": paddle.device.cuda.get_device_name(i),
                         "capability": f"{cap[0]}.{cap[1]}"})
        except Exception as exc:  # pragma: no cover - GPU only
            gpus.append({"id": i, "error": str(exc)})
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        affinity = None
    info = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "paddle": {
            "version": paddle.__version__,
            "commit": paddle.version.commit,
            "compiled_with_cuda": cuda_built,
            "cuda_version": _version_str(paddle.version.cuda()),
            "cudnn_version": _version_str(paddle.version.cudnn()),
            "tensorrt_version": _version_str(getattr(paddle.version, "tensorrt", lambda: None)()),
            "nccl_version": _version_str(getattr(paddle.version, "nccl", lambda: None)()),
            "with_mkl": _version_str(getattr(paddle.version, "with_mkl", None)),
            "with_pip_cuda_libraries": _version_str(getattr(paddle.version, "with_pip_cuda_libraries", None)),
            "device": paddle.device.get_device(),
        },
        "devices": {
            "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "gpu_count": gpu_count,
            "gpus": gpus,
            "nvidia_smi": _nvidia_smi() if cuda_built else None,
        },
        "distributed": {k: os.environ[k] for k in _DIST_ENV if k in os.environ},
        "flags": {k: os.environ[k] for k in _FLAGS if k in os.environ},
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "shm": _shm(),
        "packages": {name: _pkg_version(dists) for name, dists in _PACKAGES.items()},
        "module_distributions": {module: _installed_dists(dists) for module, dists in _SAME_MODULE.items()},
        "amp": _amp_info(paddle, gpu_count),
        "cudnn_libs": _find_libs("libcudnn.so*")[:5] if cuda_built else [],
    }
    info["distributed"]["world_size"] = int(os.environ.get("PADDLE_TRAINERS_NUM", "1"))
    info["distributed"]["rank"] = int(os.environ.get("PADDLE_TRAINER_ID", "0"))
    if run_check:
        info["run_check"] = _run_check()
    info["advice"] = advise(info)
    return info


def _amp_info(paddle, gpu_count: int) -> dict:
    if gpu_count == 0:
        return {"float16": False, "bfloat16": False,
                "note": "no GPU: paddle.amp is a no-op here (training stays fp32)"}
    fp16 = bool(paddle.amp.is_float16_supported()) if hasattr(paddle.amp, "is_float16_supported") else None
    bf16 = bool(paddle.amp.is_bfloat16_supported()) if hasattr(paddle.amp, "is_bfloat16_supported") else None
    note = "fp16 O1/O2 available" if fp16 else "fp16 not supported on this GPU"
    if bf16:
        note += "; bf16 available (no loss scaling needed)"
    return {"float16": fp16, "bfloat16": bf16, "note": note}


def _ver_tuple(v: str | None) -> tuple[int, ...] | None:
    if not v:
        return None
    nums = re.findall(r"\d+", v)
    return tuple(int(n) for n in nums[:2]) if nums else None


def advise(info: dict) -> list[str]:
    """Known mismatches -> one actionable line each. Pure function of a collect_env() dict."""
    out = []
    pd, dev, flags = info["paddle"], info["devices"], info.get("flags", {})
    if not pd["compiled_with_cuda"]:
        out.append("CPU build of paddle: training runs on CPU and AMP is a no-op. For GPUs install "
                   "paddlepaddle-gpu built for your CUDA version (see README).")
    else:
        if dev["gpu_count"] == 0:
            cvd = dev.get("CUDA_VISIBLE_DEVICES")
            out.append("paddle is built with CUDA but sees no GPU: check `nvidia-smi`, "
                       f"CUDA_VISIBLE_DEVICES={cvd!r}, and `docker run --gpus all`.")
        smi = dev.get("nvidia_smi") or {}
        drv, rt = _ver_tuple(smi.get("driver_cuda_version")), _ver_tuple(pd.get("cuda_version"))
        if drv and rt and drv < rt:
            out.append(f"driver supports CUDA {smi['driver_cuda_version']} but paddle was built for CUDA "
                       f"{pd['cuda_version']}: upgrade the NVIDIA driver or install the paddle wheel for CUDA <= "
                       f"{smi['driver_cuda_version']} (compare `nvidia-smi` with `nvcc --version`).")
        if pd.get("cudnn_version") and not info.get("cudnn_libs"):
            out.append(f"libcudnn.so not found in LD_LIBRARY_PATH or pip nvidia wheels (paddle wants cuDNN "
                       f"{pd['cudnn_version']}); 'cudnn error(5000)' usually means this: "
                       "export LD_LIBRARY_PATH=<cudnn lib dir>:$LD_LIBRARY_PATH.")
        det = flags.get("FLAGS_cudnn_deterministic")
        if det in ("1", "true", "True"):
            out.append("FLAGS_cudnn_deterministic=1: bit-reproducible convs but slower; unset it for benchmarks.")
        else:
            out.append("for bit-reproducible GPU runs: export FLAGS_cudnn_deterministic=1 (slower).")
        out.append("on CUDNN_STATUS_EXECUTION_FAILED (mostly GPU memory exhausted): lower the batch size, "
                   "or cap the conv workspace: export FLAGS_conv_workspace_size_limit=512 (MB).")
    shm = info.get("shm")
    if shm and shm["free_mb"] < SHM_ADVICE_MB:
        out.append(f"/dev/shm has only {shm['free_mb']} MB free: DataLoader workers with shared memory may "
                   "crash (bus error). Use `docker run --shm-size=8g` or Train.loader.num_workers=0 "
                   "(paddle_recipes.data.build_loader falls back to use_shared_memory=False by itself).")
    for module, dists in info.get("module_distributions", {}).items():
        if len(dists) > 1:
            out.append(f"{len(dists)} distributions install the module {module} "
                       f"({', '.join(f'{d}=={v}' for d, v in dists.items())}): each overwrote the other's files, "
                       f"and which one `import {module}` runs depends on the install order. Keep one: pip uninstall "
                       f"the others, then pip install --force-reinstall --no-deps the one kept (docs/gpu.md).")
    world = info.get("distributed", {}).get("world_size", 1)
    if pd["compiled_with_cuda"] and dev["gpu_count"] and world > 1 and world > dev["gpu_count"] \
            and "PADDLE_MASTER" not in info.get("distributed", {}):
        out.append(f"world size {world} > {dev['gpu_count']} visible GPUs on a single node: "
                   "set --devices / CUDA_VISIBLE_DEVICES to match --nproc_per_node.")
    rc = info.get("run_check")
    if rc and not rc.get("ok"):
        out.append(f"paddle.utils.run_check() failed: {rc.get('error')}")
    return out


def format_report(info: dict) -> str:
    pd, dev = info["paddle"], info["devices"]
    lines = [
        f"python:            {info['python']} ({info['platform']})",
        f"paddle:            {pd['version']} (commit {pd['commit']})",
        f"compiled w/ CUDA:  {pd['compiled_with_cuda']}  cuda={pd['cuda_version']}  cudnn={pd['cudnn_version']}"
        f"  tensorrt={pd['tensorrt_version']}  nccl={pd['nccl_version']}",
        f"device:            {pd['device']}  gpu_count={dev['gpu_count']}  "
        f"CUDA_VISIBLE_DEVICES={dev['CUDA_VISIBLE_DEVICES']}",
    ]
    for g in dev["gpus"]:
        lines.append(f"  gpu {g.get('id')}: {g.get('name')} (sm {g.get('capability')})")
    if dev.get("nvidia_smi"):
        lines.append(f"nvidia-smi:        {dev['nvidia_smi']}")
    d = info["distributed"]
    lines.append(f"distributed:       world_size={d['world_size']} rank={d['rank']} "
                 + " ".join(f"{k}={v}" for k, v in d.items() if k not in ("world_size", "rank")))
    lines.append(f"cpus:              {info['cpu_count']} (usable: {info['cpu_affinity']})")
    shm = info["shm"]
    lines.append("/dev/shm:          " + (f"{shm['free_mb']} MB free of {shm['total_mb']} MB" if shm else "n/a"))
    lines.append("packages:          " + ", ".join(f"{k}={v}" for k, v in info["packages"].items()))
    lines.append(f"amp:               fp16={info['amp']['float16']} bf16={info['amp']['bfloat16']} "
                 f"({info['amp']['note']})")
    if info["flags"]:
        lines.append("flags:             " + " ".join(f"{k}={v}" for k, v in info["flags"].items()))
    if "run_check" in info:
        rc = info["run_check"]
        lines.append(f"run_check:         {'OK' if rc['ok'] else 'FAILED: ' + rc.get('error', '')}")
        lines += ["  " + ln for ln in rc["output"].splitlines()]
    if info["advice"]:
        lines.append("advice:")
        lines += [f"  - {a}" for a in info["advice"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m paddle_recipes.runtime.env", description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print the collect_env() dict as JSON")
    p.add_argument("--no-run-check", action="store_true", help="skip paddle.utils.run_check()")
    args = p.parse_args(argv)
    info = collect_env(run_check=not args.no_run_check)
    print(json.dumps(info, indent=2, ensure_ascii=False) if args.json else format_report(info))
    return 0 if info.get("run_check", {"ok": True})["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
