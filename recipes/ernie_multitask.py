"""`python recipes/ernie_multitask.py` / `python -m paddle.distributed.launch recipes/ernie_multitask.py`: see paddle_recipes.recipes.ernie_multitask."""
from paddle_recipes.recipes.ernie_multitask import cli
if __name__ == "__main__":
    cli()
