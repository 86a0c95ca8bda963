"""Gated statistics: pure functions of clip records, plus thin store wrappers (service.py)."""
