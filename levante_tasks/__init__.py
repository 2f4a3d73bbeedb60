"""LEVANTE developmental tasks for lmms-eval, and IRT comparison of models with children."""

__version__ = "0.1.0"
