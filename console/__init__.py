"""The engine: everything that runs. Never imports Textual."""
