"""Reading a file gpudeck keeps (or was handed) without trusting what sits at the path.

The reader itself is `profiles.capped_read`, below every package, so the
profiles and the store read their files by the same rules: only a regular
file, only up to a size cap, each refusal one line naming the file.
"""
from __future__ import annotations

from profiles.capped_read import FileRefused, open_regular, read_capped

__all__ = ["FileRefused", "open_regular", "read_capped"]
