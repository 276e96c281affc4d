"""Saved state: host profiles and everything kept per profile.

Depends only on the standard library, platformdirs and tomli-w, so every
other layer can read and write state without pulling in the engine or the UI.
"""
