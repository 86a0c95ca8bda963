"""omni-tasks: nightly accuracy-regression tracking for omni (speech-out) models."""

__version__ = "0.1.0"
