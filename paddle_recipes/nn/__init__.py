"""Networks and layers shared by several tasks (imports nothing task-specific): one file per backbone family,
shared layers in ``layers.py``, and ``catalog.py``, the one table of networks (``build_backbone``)."""
