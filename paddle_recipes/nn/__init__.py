"""Layers and backbones shared by several tasks (imports nothing task-specific)."""
