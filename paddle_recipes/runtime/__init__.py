"""The process a recipe runs in: `distributed` (process group, device, per-rank seeds, DDP wrap), `peers` (lost-node
detection), `lifetime` (die with the parent), `device_defaults` (threads, allocator flags), `env` (the env check)."""
