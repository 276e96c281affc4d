"""How many inputs each fuzz test tries, one place for every tests/test_fuzz_*.py: 200 per kind in the
suite, 1,000 with GPUDECK_FUZZ=nightly. Runs are derandomized, so a failure found once is found again."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

BUDGETS = {"default": 200, "nightly": 1000}
if os.environ.get("GPUDECK_FUZZ", "default") not in BUDGETS:
    raise pytest.UsageError(f"GPUDECK_FUZZ={os.environ['GPUDECK_FUZZ']!r}: use one of {', '.join(BUDGETS)}")
EXAMPLES = BUDGETS[os.environ.get("GPUDECK_FUZZ", "default")]


def fuzz_settings(examples: int = EXAMPLES) -> settings:
    """Hypothesis settings for `examples` inputs: no deadline (a loaded machine), no saved database."""
    return settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))
