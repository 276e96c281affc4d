"""One error type for everything the roofline cannot work out."""
from __future__ import annotations


class RooflineError(ValueError):
    """A config, GPU name or setting the roofline cannot use; the message names the field."""
