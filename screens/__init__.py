"""Textual screens: compose widgets, bind keys to engine calls."""
