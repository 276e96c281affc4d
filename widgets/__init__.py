"""Textual widgets: draw plain data, own no I/O."""
