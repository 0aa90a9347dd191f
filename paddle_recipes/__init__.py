"""paddle_recipes: composable blocks for fast, reproducible PaddlePaddle training."""
import importlib.util as _util
import os as _os
import sys as _sys
import warnings as _warnings

__version__ = "0.1.0"

# `import paddle` (3.3) imports paddle.utils.cpp_extension, which warns "No ccache found" on every machine without
# ccache (a compile-cache hint for building custom ops) into every run's console; only that message is filtered.
_warnings.filterwarnings("ignore", message="No ccache found", category=UserWarning)


class MissingDependencyError(ImportError):
    """PaddlePaddle, OpenCV or (for augmentation) albumentations is not installed. pyproject.toml leaves paddle and
    cv2 to the user's environment (one paddle: the CPU or the GPU wheel; one cv2: e.g. paddlex's
    opencv-contrib-python beside paddleocr 3.x); its extras ``cpu`` and ``cv`` (both in ``all``) install
    paddlepaddle==3.3.1 and opencv-python-headless, ``aug`` albumentations."""


# module -> the one line saying what to install when it is missing
_NEEDED = {"paddle": "PaddlePaddle is not installed (no module paddle): pip install -e \".[cpu]\" for the CPU wheel "
                     "paddlepaddle==3.3.1, or paddlepaddle-gpu on a GPU machine (docs/gpu.md)",
           "cv2": "OpenCV is not installed (no module cv2): pip install -e \".[cv]\" (opencv-python-headless), or "
                  "any one OpenCV distribution (beside paddleocr 3.x, paddlex's opencv-contrib-python serves)"}


def import_albumentations(setting: str):
    """The albumentations module, or a MissingDependencyError naming ``setting`` (the config key that asked for
    augmentation) and how to install it (extra ``aug``) or turn it off."""
    try:
        import albumentations  # optional dependency (extra aug), imported only when augmentation is asked for
    except ImportError as exc:
        raise MissingDependencyError(
            f"{setting}: augmentation needs albumentations ({exc}): pip install -e \".[aug]\" (it brings "
            f"opencv-python-headless, a second cv2 distribution beside another one: docs/gpu.md), or set "
            f"{setting.rsplit('.', 1)[-1]}: false") from None
    return albumentations


def _installed(module: str) -> bool:
    try:
        return _util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that fails to import, or sys.modules[module] = None
        return False


def _one_line_hook(previous):
    """sys.excepthook for a script or console command: a MissingDependencyError is its one line on stderr, exit 2."""
    def hook(kind, value, tb):
        if not isinstance(value, MissingDependencyError):
            return previous(kind, value, tb)
        print(f"paddle_recipes: error: {value}", file=_sys.stderr, flush=True)
        _os._exit(2)  # the interpreter is ending on this exception anyway; its default status would be 1
    return hook


_missing = [what for module, what in _NEEDED.items() if not _installed(module)]
if _missing:
    _sys.excepthook = _one_line_hook(_sys.excepthook)
    raise MissingDependencyError("; ".join(_missing))
