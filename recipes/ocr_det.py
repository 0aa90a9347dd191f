"""`python recipes/ocr_det.py` / `python -m paddle.distributed.launch recipes/ocr_det.py`: see paddle_recipes.recipes.ocr_det."""
from paddle_recipes.recipes.ocr_det import cli
if __name__ == "__main__":
    cli()
