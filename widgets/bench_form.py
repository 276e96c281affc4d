"""The run setup form: server, model, levels or rates, workload. Plain values in and out, no I/O.

Each label says what the field holds and in what unit; placeholders say
what an empty field means.
"""
from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Select

from console.safe_text import clean_line, safe_text

from widgets.field_select import FieldSelect

FIELDS = (  # id, label, default, width, placeholder; label and placeholder fit in the width less 6
    ("url", "server URL", "", 32, "http://127.0.0.1:30000"),
    ("levels", "concurrency (streams)", "1,2,10,64,256,512", 28, "1,2,10,64"),
    ("request_rate", "or rates (req/s)", "", 24, "open loop: 1,4,inf"),
    ("max_concurrency", "max in flight", "", 19, "no cap"),
    ("input_len", "prompt tokens", "1024", 19, ""),
    ("output_len", "output tokens", "256", 19, ""),
    ("num_prompts", "requests (2c = 2×streams)", "", 31, "8×streams, min 32"),
    ("shared_prefix_len", "shared prefix tokens", "", 26, "0: all unique"),
    ("dataset", "dataset (JSONL/ShareGPT)", "", 30, "random prompts"),
    ("temperature", "temperature", "", 17, "0"),
    ("burstiness", "burstiness", "", 16, "1: Poisson"),
    ("range_ratio", "length spread ±", "", 21, "0: exact"),
    ("api_key_env", "API key env", "", 17, "none"),
)
# Each field's label is the title in its top border: one widget a field, three lines a row.
# Four rows, each under 98 columns, so a 100-column split shows every field and the Start button:
# where and what; the workload's shape; open-loop rates, sampling and the key; the prompts' source.
# ("model", "api" and "start" are the two drop-downs and the button.)
ROWS = (("url", "levels", "model"),
        ("input_len", "output_len", "num_prompts", "api"),
        ("request_rate", "max_concurrency", "burstiness", "temperature", "api_key_env"),
        ("dataset", "shared_prefix_len", "range_ratio", "start"))
KEYS = tuple(f[0] for f in FIELDS)


class BenchForm(Vertical):
    DEFAULT_CSS = """
    BenchForm { height: auto; padding: 0 1; }
    BenchForm Horizontal { height: auto; }
    BenchForm Input, BenchForm FieldSelect { margin-right: 1; }
    BenchForm Input, BenchForm SelectCurrent { border-title-color: $text-muted; }
    BenchForm #bf-model { width: 34; }
    BenchForm #bf-api { width: 22; }
    """

    class Submitted(Message):
        def __init__(self, values: dict) -> None:
            self.values = values
            super().__init__()

    def compose(self) -> ComposeResult:
        spec = {f[0]: f for f in FIELDS}
        for row in ROWS:
            with Horizontal():
                for key in row:
                    if key == "start":
                        yield Button("Start", id="bf-start", variant="primary")
                    elif key == "model":
                        yield FieldSelect([], id="bf-model", prompt="(from /v1/models)", allow_blank=True,
                                          title="model")
                    elif key == "api":
                        yield FieldSelect([("completions", "completions"), ("chat", "chat")], id="bf-api",
                                          value="completions", allow_blank=False, title="API")
                    else:
                        _, label, default, width, placeholder = spec[key]
                        # Tab into a field puts the cursor at its end: selected whole, the next key
                        # replaced the levels list an operator meant to add one level to
                        field = Input(default, id=f"bf-{key}", placeholder=placeholder, select_on_focus=False)
                        field.border_title = label
                        field.styles.width = width
                        yield field

    def reset(self) -> None:
        """Every field back to its default and no model listed: what the form shows before a host
        fills it in (a host without a URL or settings of its own must not show the last host's)."""
        for key, _label, default, _width, _placeholder in FIELDS:
            self.query_one(f"#bf-{key}", Input).value = default
        self.query_one("#bf-api", Select).value = "completions"
        self.query_one("#bf-model", Select).set_options([])
        self._wanted_model = None

    def set_url(self, url: str | None) -> None:
        if url:
            self.query_one("#bf-url", Input).value = clean_line(url)  # an Input draws its value raw

    def set_defaults(self, values: dict) -> None:
        """Prefill from the profile's [bench] section or the remembered form; None leaves a field as it is."""
        for key in KEYS:
            if key != "url" and values.get(key) is not None:
                self.query_one(f"#bf-{key}", Input).value = clean_line(values[key])  # an Input draws raw
        if values.get("url"):
            self.set_url(values["url"])
        if values.get("api") in ("completions", "chat"):
            self.query_one("#bf-api", Select).value = values["api"]
        self._wanted_model = values.get("model") or getattr(self, "_wanted_model", None)

    def set_models(self, models: list[str]) -> None:
        select = self.query_one("#bf-model", Select)
        select.set_options([(safe_text(m), m) for m in models])  # names come from the server: shown literally
        wanted = getattr(self, "_wanted_model", None)
        if models:
            select.value = wanted if wanted in models else models[0]

    def values(self) -> dict:
        model = self.query_one("#bf-model", Select).value
        out = {key: self.query_one(f"#bf-{key}", Input).value.strip() for key in KEYS}
        out["model"] = model if isinstance(model, str) else None
        out["api"] = self.query_one("#bf-api", Select).value
        return out

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "bf-start":
            event.stop()
            self.post_message(self.Submitted(self.values()))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Submitted(self.values()))
