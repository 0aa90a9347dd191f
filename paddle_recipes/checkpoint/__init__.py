"""A run's state on disk: `format` (atomic checkpoint folders, `latest`, save/load), `state` (what a checkpoint
holds: model, optimizer, RNG, loader position), `compare` (may this checkpoint resume this run?), `resume`
(which checkpoint), `rundir` (the output folder and its lock), `finite` (no inf/nan is saved), `serialization`
(safe loading: a restricted unpickler, safetensors)."""
