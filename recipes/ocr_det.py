"""`python recipes/ocr_det.py` / `python -m paddle.distributed.launch recipes/ocr_det.py`: see paddle_recipes.recipes.ocr_det."""
from paddle_recipes.runtime.stopping import run_entry  # standard library only: SIGTERM is one line, and a bad weights file or dict too, before paddle is imported
if __name__ == "__main__":
    run_entry("paddle_recipes.recipes.ocr_det", preflight="paddle_recipes.recipes.preflight")
