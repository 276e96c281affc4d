"""The one rule for a Slurm job id, wherever one is read: sbatch's answer, scontrol's, a launch record.

Slurm's job ids are unsigned 32-bit numbers (a federated cluster's included),
never 0, printed in plain ASCII digits. Two readers with two rules left a
record whose id one accepted and the other refused stuck in `launching`.
"""
from __future__ import annotations

import re

MAX_JOB_ID = 2**32 - 1
_FORM = re.compile(r"[1-9][0-9]{0,9}")


def checked(value: object) -> str | None:
    """`value` when it is a job id Slurm could have given, else None."""
    if not isinstance(value, str) or not _FORM.fullmatch(value):
        return None
    return value if int(value) <= MAX_JOB_ID else None
