"""paddle_recipes: composable blocks for fast, reproducible PaddlePaddle training."""
__version__ = "0.1.0"
