"""The findings report: one Markdown document per profile, refreshed in place.

- `document`   collect the profile's records, render the sections, refresh the file between markers,
               and offer efficiency suggestions
- `sections`   each section's Markdown (GPUs, configs, runs, roofline, crashes)
- `tasks`      the task board as Markdown (also `tasks --markdown`)
- `campaigns`  campaign results as Markdown
"""
from __future__ import annotations

from .document import ReportError, offer_run_efficiency, refresh_document, write_report

__all__ = ["ReportError", "offer_run_efficiency", "refresh_document", "write_report"]
