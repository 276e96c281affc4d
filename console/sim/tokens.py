"""A toy tokenizer and the words the simulated model "writes".

One token is a word with its leading spaces, one digit, or one other
character. Ids are handed out as pieces are first seen, so tokenize and
detokenize are exact inverses within one server process, which is all the
benchmark's exact-length prompts need.
"""
from __future__ import annotations

import random
import re

_PIECE = re.compile(r"\s*[A-Za-z]+|\s*[0-9]|\s*[^\sA-Za-z0-9]|\s+$")

_OUTPUT_WORDS = (
    "the simulated model answers with plausible filler text so that every token "
    "is timed by the roofline and nothing here comes from a real network weights "
    "batch decode step memory bandwidth expert layer attention cache token stream"
).split()


class Vocab:
    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.ids: dict[str, int] = {}

    def tokenize(self, text: str) -> list[int]:
        out = []
        for piece in _PIECE.findall(text):
            token = self.ids.get(piece)
            if token is None:
                token = len(self.pieces)
                self.pieces.append(piece)
                self.ids[piece] = token
            out.append(token)
        return out

    def detokenize(self, tokens: list[int]) -> str:
        return "".join(self.pieces[t] if 0 <= t < len(self.pieces) else "" for t in tokens)

    def count(self, text: str) -> int:
        return len(_PIECE.findall(text))


def prompt_tokens(vocab: Vocab, prompt) -> int:
    """Token count of a completions `prompt` (a string, a list of ids, or a list of strings)."""
    if isinstance(prompt, str):
        return vocab.count(prompt)
    if isinstance(prompt, list):
        if all(isinstance(t, int) for t in prompt):
            return len(prompt)
        return sum(prompt_tokens(vocab, p) for p in prompt)
    return 0


def chat_prompt_tokens(vocab: Vocab, messages) -> int:
    """Tokens of a chat: each message's text plus a few for the template."""
    total = 0
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # multi-part content
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        total += 4 + (vocab.count(content) if isinstance(content, str) else 0)
    return total + 2


class Writer:
    """The pieces of one response, and where it would stop without ignore_eos."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def piece(self) -> str:
        return " " + self.rng.choice(_OUTPUT_WORDS)

    def natural_length(self) -> int:
        return self.rng.randint(24, 400)
