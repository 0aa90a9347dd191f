"""`python recipes/ocr_system.py --mode predict|eval`: see paddle_recipes.recipes.ocr_system."""
from paddle_recipes.recipes.ocr_system import cli
if __name__ == "__main__":
    cli()
