"""Fusion: the recorder, the registry of pending arrays and materialization (see materialize.py)."""
