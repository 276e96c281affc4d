"""The what-if editor: one input per setting; it posts the values, the pane recomputes."""
from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Label

from console.safe_text import clean_line

# (field, label, width) in the order the operator reads them: the setup on one row, the
# model's knobs on the next, so both rows fit a 100-column terminal
SETUP = (
    ("gpu", "GPU", 26), ("count", "count", 7), ("tp", "tp", 6), ("ep", "ep", 6),
    ("quant", "quant", 11), ("kv_dtype", "KV", 7), ("context", "context", 9),
)
KNOBS = (
    ("allreduce_alpha_us", "α µs", 8), ("allreduce_beta_gbs", "β GB/s", 9),
    ("mem_efficiency", "mem eff", 8), ("step_overhead_us", "step µs", 9),
)
FIELDS = SETUP + KNOBS


# what each field accepts, enforced as it is typed: a refused key never reaches the value
_WHOLE = r"[0-9]*"
_DECIMAL = r"[0-9]*\.?[0-9]*"
RESTRICT = {"count": _WHOLE, "tp": _WHOLE, "ep": _WHOLE, "context": _WHOLE, "allreduce_alpha_us": _DECIMAL,
            "allreduce_beta_gbs": _DECIMAL, "mem_efficiency": _DECIMAL, "step_overhead_us": _DECIMAL}


class WhatIf(Vertical):
    DEFAULT_CSS = """
    WhatIf { height: auto; border-top: solid $accent; padding: 0 1; }
    WhatIf Horizontal { height: auto; }
    WhatIf .wi-cell { width: auto; height: auto; margin-right: 1; }
    WhatIf Label { color: $text-muted; }
    WhatIf Input { background: $boost; }
    WhatIf Input:focus { background: $accent 40%; text-style: bold; }
    """

    class Changed(Message):
        def __init__(self, values: dict[str, str]) -> None:
            self.values = values
            super().__init__()

    def compose(self) -> ComposeResult:
        yield Label("what-if: edit and everything recomputes (empty = from the profile / catalogue)"
                    " · Tab next field · Esc back to the table")

        for row in (SETUP, KNOBS):
            with Horizontal():
                for key, label, width in row:
                    with Vertical(classes="wi-cell"):
                        yield Label(label)
                        yield Input(id=f"wi-{key}", placeholder="", compact=True,
                                    restrict=RESTRICT.get(key)).set_styles(f"width: {width};")

    def fill(self, values: dict[str, Any]) -> None:
        """Show current values without posting a change."""
        for key, _, _ in FIELDS:
            box = self.query_one(f"#wi-{key}", Input)
            with box.prevent(Input.Changed):
                box.value = "" if values.get(key) is None else clean_line(values[key])  # an Input draws raw text

    def values(self) -> dict[str, str]:
        return {key: self.query_one(f"#wi-{key}", Input).value.strip() for key, _, _ in FIELDS}

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.Changed(self.values()))
