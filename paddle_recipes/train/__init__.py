"""The training loop and what plugs into it: `trainer` (one loop for every recipe), `build` (the shared config
sections and build_training), `amp`, `accumulate`, `ema`, `optim`, `meters` (PaddleOCR's log line), `to_static`
(a static-graph training step), `distill` (knowledge distillation losses, temperature schedules)."""
