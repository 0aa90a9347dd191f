"""Speedup methods for time to accuracy (Composer style): each module holds one method with a
functional API and a Trainer Callback (or a train-step builder); docs/cards/<name>.md says when it helps.

    from paddle_recipes.speedups.ctc_init import CTCBlankBias        # leave the CTC blank plateau sooner
    from paddle_recipes.speedups.train_metric import ctc_train_step    # train accuracy every N steps (no per-step sync)
    from paddle_recipes.speedups.curriculum import LengthCurriculumSampler  # short lines first (SortaGrad-like)
    from paddle_recipes.speedups.flops import count_flops              # FLOPs per sample (forward hooks)
"""
