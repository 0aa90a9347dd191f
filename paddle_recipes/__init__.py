"""paddle_recipes: composable blocks for fast, reproducible PaddlePaddle training."""
import warnings as _warnings

__version__ = "0.1.0"

# `import paddle` (3.3) imports paddle.utils.cpp_extension, which warns "No ccache found" on every machine without
# ccache (a compile-cache hint for building custom ops) into every run's console; only that message is filtered.
_warnings.filterwarnings("ignore", message="No ccache found", category=UserWarning)
