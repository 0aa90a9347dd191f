"""`python recipes/ocr_cls.py` / `python -m paddle.distributed.launch recipes/ocr_cls.py`: see paddle_recipes.recipes.ocr_cls."""
from paddle_recipes.recipes.ocr_cls import cli
if __name__ == "__main__":
    cli()
