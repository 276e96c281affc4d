"""The Roofline headline: the efficiency in big digits, the sentence beside it, the setup under it."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Digits, Static

from console.roofline.compare import Headline
from console.safe_text import clean_line, safe_text


class RooflineHeadline(Vertical):
    DEFAULT_CSS = """
    RooflineHeadline { height: auto; padding: 0 1; }
    RooflineHeadline > Horizontal { height: auto; }
    RooflineHeadline Digits { width: auto; color: $warning; margin-right: 2; }
    RooflineHeadline #rl-sentence { width: 1fr; content-align: left middle; height: 3; text-style: bold; }
    RooflineHeadline #rl-setup { color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Digits("--", id="rl-digits")
            yield Static("", id="rl-sentence", markup=False)
        yield Static("", id="rl-setup", markup=False)

    def show(self, head: Headline | None, setup_line: str, problem: str | None = None) -> None:
        digits = self.query_one(Digits)
        sentence = self.query_one("#rl-sentence", Static)
        if problem:
            digits.update("--")
            sentence.update(safe_text(f"roofline unavailable: {problem}", newlines=True))
        elif head is None or head.efficiency_pct is None:
            digits.update(f"{head.ideal_tok_s:.0f}" if head else "--")
            sentence.update(safe_text(head.sentence if head else "", newlines=True))
        else:
            digits.update(f"{head.efficiency_pct:.1f}%")
            sentence.update(safe_text(head.sentence + (f"\nrun {clean_line(head.run_name)}" if head.run_name else ""),
                                      newlines=True))
        self.query_one("#rl-setup", Static).update(safe_text(setup_line, newlines=True))
