"""`python recipes/ocr_rec.py` / `python -m paddle.distributed.launch recipes/ocr_rec.py`: see paddle_recipes.recipes.ocr_rec."""
from paddle_recipes.runtime.stopping import run_entry  # standard library only: SIGTERM is one line, and a bad weights file or dict too, before paddle is imported
if __name__ == "__main__":
    run_entry("paddle_recipes.recipes.ocr_rec", preflight="paddle_recipes.recipes.preflight")
