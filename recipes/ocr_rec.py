"""`python recipes/ocr_rec.py` / `python -m paddle.distributed.launch recipes/ocr_rec.py`: see paddle_recipes.recipes.ocr_rec."""
from paddle_recipes.recipes.ocr_rec import cli
if __name__ == "__main__":
    cli()
