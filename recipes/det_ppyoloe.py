"""`python recipes/det_ppyoloe.py` / `python -m paddle.distributed.launch recipes/det_ppyoloe.py`: see paddle_recipes.recipes.det_ppyoloe."""
from paddle_recipes.runtime.stopping import run_entry  # standard library only: SIGTERM is one line, and a bad config, weights file or dict too, before paddle is imported
if __name__ == "__main__":
    run_entry("paddle_recipes.recipes.det_ppyoloe", preflight="paddle_recipes.recipes.preflight")
