"""The project's corpus of real server log excerpts (see README.md)."""
