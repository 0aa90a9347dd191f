"""`python recipes/ocr_system.py` / `python -m paddle.distributed.launch recipes/ocr_system.py`: see paddle_recipes.recipes.ocr_system."""
from paddle_recipes.runtime.stopping import run_entry  # standard library only: SIGTERM is one line, and a bad config, weights file or dict too, before paddle is imported
if __name__ == "__main__":
    run_entry("paddle_recipes.recipes.ocr_system", preflight="paddle_recipes.recipes.preflight")
