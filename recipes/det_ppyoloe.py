"""`python recipes/det_ppyoloe.py` / `python -m paddle.distributed.launch recipes/det_ppyoloe.py`: see paddle_recipes.recipes.det_ppyoloe."""
from paddle_recipes.recipes.det_ppyoloe import cli
if __name__ == "__main__":
    cli()
