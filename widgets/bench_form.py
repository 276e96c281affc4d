"""The run setup form: endpoint, model, workload, levels. Plain values in and out, no I/O."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Label, Select

from console.safe_text import clean_line, safe_text

FIELDS = (  # id, label, default, width
    ("url", "endpoint", "", 34),
    ("levels", "concurrency", "1,2,10,64,256,512", 26),
    ("input_len", "in tokens", "1024", 10),
    ("output_len", "out tokens", "256", 10),
    ("num_prompts", "prompts/level", "", 22),
)


class BenchForm(Vertical):
    DEFAULT_CSS = """
    BenchForm { height: auto; padding: 0 1; }
    BenchForm Horizontal { height: auto; }
    BenchForm .field { width: auto; height: auto; margin-right: 1; }
    BenchForm Label { color: $text-muted; }
    BenchForm #bf-model { width: 40; }
    BenchForm #bf-api { width: 22; }
    BenchForm #bf-start { margin-top: 1; }
    """

    class Submitted(Message):
        def __init__(self, values: dict) -> None:
            self.values = values
            super().__init__()

    def compose(self) -> ComposeResult:
        with Horizontal():
            for key, label, default, width in FIELDS[:2]:
                with Vertical(classes="field"):
                    yield Label(label)
                    yield Input(default, id=f"bf-{key}", placeholder="http://127.0.0.1:30000" if key == "url" else "")
            with Vertical(classes="field"):
                yield Label("model")
                yield Select([], id="bf-model", prompt="(from /v1/models)", allow_blank=True)
        with Horizontal():
            for key, label, default, width in FIELDS[2:]:
                with Vertical(classes="field"):
                    yield Label(label)
                    yield Input(default, id=f"bf-{key}", placeholder="max(8c,32) · N or Nc" if key == "num_prompts" else "")
            with Vertical(classes="field"):
                yield Label("api")
                yield Select([("completions", "completions"), ("chat", "chat")], id="bf-api",
                             value="completions", allow_blank=False)
            yield Button("Start", id="bf-start", variant="primary")

    def on_mount(self) -> None:
        for key, _, _, width in FIELDS:
            self.query_one(f"#bf-{key}", Input).styles.width = width

    def set_url(self, url: str | None) -> None:
        if url:
            self.query_one("#bf-url", Input).value = clean_line(url)  # an Input draws its value raw

    def set_defaults(self, values: dict) -> None:
        """Prefill from the profile's [bench] section; None leaves a field as it is."""
        for key in ("levels", "input_len", "output_len", "num_prompts"):
            if values.get(key) is not None:
                self.query_one(f"#bf-{key}", Input).value = clean_line(values[key])

    def set_models(self, models: list[str]) -> None:
        select = self.query_one("#bf-model", Select)
        select.set_options([(safe_text(m), m) for m in models])  # names come from the server: shown literally
        if models:
            select.value = models[0]

    def values(self) -> dict:
        get = lambda key: self.query_one(f"#bf-{key}", Input).value.strip()  # noqa: E731
        model = self.query_one("#bf-model", Select).value
        return {"url": get("url"), "levels": get("levels"), "input_len": get("input_len"),
                "output_len": get("output_len"), "num_prompts": get("num_prompts"),
                "model": model if isinstance(model, str) else None,
                "api": self.query_one("#bf-api", Select).value}

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "bf-start":
            event.stop()
            self.post_message(self.Submitted(self.values()))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Submitted(self.values()))
