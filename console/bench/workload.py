"""Random prompts of a fixed input length.

With a server that tokenizes (llama.cpp and vLLM expose `/tokenize` and
`/detokenize`), a pool of random words is tokenized once and every prompt is
a random window of exactly `input_len` tokens, detokenized and checked. A
server without them gets prompts of `input_len` random common words, about
one token each, and the workload is flagged approximate.
"""
from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

import httpx

# Short, common words: most are a single token with a leading space in BPE vocabularies.
_WORDS = (
    "time year people way day man thing woman life child world school state family "
    "student group country problem hand part place case week company system program "
    "question work government number night point home water room mother area money "
    "story fact month lot right study book eye job word business issue side kind head "
    "house service friend father power hour game line end member law car city name "
    "team minute idea kid body back parent face others level office door health person "
    "art war history party result change morning reason research girl guy moment air "
    "teacher force order red blue green small large old new good great high low long "
    "make take come see know get give find think tell become show leave feel put bring"
).split()


@dataclass
class Workload:
    """The prompts of one level and how exact their lengths are."""

    prompts: list[str]
    input_len: int
    method: str                      # "tokenize" or "approximate"
    lengths: list[int | None] = field(default_factory=list)

    @property
    def approximate(self) -> bool:
        return self.method != "tokenize"


class Tokenizer:
    """The server's /tokenize and /detokenize, in llama.cpp's or vLLM's dialect."""

    def __init__(self, client: httpx.AsyncClient, model: str | None):
        self.client = client
        self.model = model
        self.dialect: str | None = None

    async def probe(self) -> bool:
        for dialect in ("llama.cpp", "vllm"):
            self.dialect = dialect
            try:
                tokens = await self.tokenize(" hello world")
            except (httpx.HTTPError, ValueError, KeyError, TypeError):
                continue
            if tokens and all(isinstance(t, int) for t in tokens):
                try:
                    await self.detokenize(tokens)
                except (httpx.HTTPError, ValueError, KeyError, TypeError):
                    continue
                return True
        self.dialect = None
        return False

    async def tokenize(self, text: str) -> list[int]:
        if self.dialect == "llama.cpp":
            body = {"content": text, "add_special": False}
        else:
            body = {"prompt": text, "add_special_tokens": False, **({"model": self.model} if self.model else {})}
        resp = await self.client.post("/tokenize", json=body)
        resp.raise_for_status()
        tokens = resp.json()["tokens"]
        # llama.cpp may return [{"id":..}] when asked for pieces; plain ids otherwise
        return [t["id"] if isinstance(t, dict) else t for t in tokens]

    async def detokenize(self, tokens: list[int]) -> str:
        body: dict = {"tokens": tokens}
        if self.dialect == "vllm" and self.model:
            body["model"] = self.model
        resp = await self.client.post("/detokenize", json=body)
        resp.raise_for_status()
        doc = resp.json()
        return doc["content"] if "content" in doc else doc["prompt"]


def random_words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(count))


async def build_workload(tokenizer: Tokenizer | None, count: int, input_len: int,
                         seed: int = 0, parallel: int = 8) -> Workload:
    """`count` random prompts of `input_len` tokens (exact when the server tokenizes)."""
    rng = random.Random(seed)
    if tokenizer is None or tokenizer.dialect is None:
        prompts = [random_words(rng, input_len) for _ in range(count)]
        return Workload(prompts, input_len, "approximate", [None] * count)
    pool: list[int] = []
    while len(pool) < input_len * 4 + 64:
        pool += await tokenizer.tokenize(" " + random_words(rng, max(input_len * 2, 256)))
    starts = [rng.randrange(0, len(pool) - input_len) for _ in range(count)]
    gate = asyncio.Semaphore(parallel)

    async def one(start: int) -> tuple[str, int]:
        async with gate:
            return await _exact_prompt(tokenizer, pool[start:start + input_len], input_len)

    made = await asyncio.gather(*(one(s) for s in starts))
    prompts = [text for text, _ in made]
    lengths = [n for _, n in made]
    method = "tokenize" if all(n == input_len for n in lengths) else "approximate"
    return Workload(prompts, input_len, method, lengths)


async def _exact_prompt(tokenizer: Tokenizer, window: list[int], input_len: int) -> tuple[str, int]:
    """Detokenize a window; if re-tokenizing changes the count, trim or pad a few times."""
    tokens = list(window)
    text = await tokenizer.detokenize(tokens)
    for _ in range(4):
        again = await tokenizer.tokenize(text)
        if len(again) == input_len:
            return text, input_len
        if len(again) > input_len:
            text = await tokenizer.detokenize(again[:input_len])
        else:
            text = text + " the" * (input_len - len(again))
    return text, len(await tokenizer.tokenize(text))
