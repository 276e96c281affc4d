"""The load generator: streaming OpenAI-compatible requests at fixed concurrency levels.

It runs as its own process (`python -m console.bench` or `gpudeck bench`)
and speaks JSON lines (events.py) so a UI can follow it without sharing its
event loop.
"""
