"""The prompts of a level: random ones of a set length, or a dataset's.

Random prompts never repeat by accident, so a server's prefix cache can't
flatter TTFT: every prompt starts with a prefix unique to it in the run
(its number, written in the alphabet's symbols through a scrambling
bijection), then random symbols. `shared_prefix_len` puts the same leading
symbols on every prompt, to measure prefix caching on purpose.

The alphabet: with a server that tokenizes (llama.cpp and vLLM expose
`/tokenize` and `/detokenize`), the token ids that tokenizing random
pseudo-words yields (thousands of ordinary tokens and never a special one,
since plain text never tokenizes to one); each prompt is detokenized and
re-tokenized to exactly its length. Otherwise common words, about one token
each, and the workload is flagged approximate.
"""
from __future__ import annotations

import asyncio
import random
import math
from dataclasses import dataclass, field
from typing import Sequence

import httpx

from .dataset import Dataset, DatasetItem, load_dataset, open_dataset   # noqa: F401 - the workload's readers

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

    prompts: list                    # text, or chat messages (a dataset's)
    input_len: int
    method: str                      # "tokenize" or "approximate"
    lengths: list[int | None] = field(default_factory=list)
    output_lens: list[int] | None = None   # per request; None: the run's output length for all

    @property
    def approximate(self) -> bool:
        return self.method != "tokenize"


class Tokenizer:
    """The server's /tokenize and /detokenize, in llama.cpp's or vLLM's dialect."""

    def __init__(self, client: httpx.AsyncClient, model: str | None):
        self.client = client
        self.model = model
        self.dialect: str | None = None
        self.alphabet: list[int] | None = None

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



_SYLLABLES = ("ba be bi bo bu da de di do du fa fe fi fo fu ga ge gi go gu ka ke ki ko ku la le li lo lu "
              "ma me mi mo mu na ne ni no nu pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu "
              "va ve vi vo vu za ze zi zo zu an en in on un ar er ir or ur ex ix ox").split()


def random_words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(count))


def _pseudo_words(rng: random.Random, count: int) -> str:
    words = []
    for _ in range(count):
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4)))
        words.append(word.capitalize() if rng.random() < 0.2 else word)
    return " " + " ".join(words)


async def token_alphabet(tokenizer: Tokenizer, seed: int = 0) -> list[int]:
    """Distinct ordinary token ids, from tokenizing random pseudo-words and common words."""
    if tokenizer.alphabet is None:
        rng = random.Random(seed)
        seen: set[int] = set()
        seen.update(await tokenizer.tokenize(" " + " ".join(_WORDS)))
        for _ in range(6):
            seen.update(await tokenizer.tokenize(_pseudo_words(rng, 600)))
        tokenizer.alphabet = sorted(seen)
    return tokenizer.alphabet


class UniquePrefix:
    """Request number -> a few symbols, different for every number (a scrambled bijection)."""

    def __init__(self, alphabet_size: int, total: int, rng: random.Random):
        self.base = alphabet_size
        self.digits = 2
        while alphabet_size ** self.digits < total:
            self.digits += 1
        self.space = alphabet_size ** self.digits
        self.mul = 1_000_003
        while math.gcd(self.mul, self.space) != 1:
            self.mul += 2
        self.add = rng.randrange(self.space)

    def symbols(self, number: int) -> list[int]:
        x = (number * self.mul + self.add) % self.space
        out = []
        for _ in range(self.digits):
            x, digit = divmod(x, self.base)
            out.append(digit)
        return out


def lengths_for(rng: random.Random, count: int, length: int, range_ratio: float) -> list[int]:
    """`count` lengths, uniform in [length*(1-r), length*(1+r)] (vLLM's --random-range-ratio)."""
    if range_ratio <= 0:
        return [length] * count
    low = max(1, int(length * (1 - range_ratio)))
    high = max(low, int(length * (1 + range_ratio)))
    return [rng.randint(low, high) for _ in range(count)]


def symbol_prompts(alphabet_size: int, lengths: list[int], rng: random.Random, *, shared_prefix_len: int = 0,
                   first_number: int = 0, total: int | None = None, shared_rng: random.Random | None = None
                   ) -> list[list[int]]:
    """Prompts as symbol indexes: shared prefix, then a unique prefix, then random symbols."""
    return list(iter_symbol_prompts(alphabet_size, lengths, rng, shared_prefix_len=shared_prefix_len,
                                    first_number=first_number, total=total, shared_rng=shared_rng))


def iter_symbol_prompts(alphabet_size: int, lengths: list[int], rng: random.Random, *, shared_prefix_len: int = 0,
                        first_number: int = 0, total: int | None = None, shared_rng: random.Random | None = None):
    """`symbol_prompts` one prompt at a time (the same prompts): a caller can give way between them."""
    unique = UniquePrefix(alphabet_size, max(total or 0, first_number + len(lengths)), shared_rng or rng)
    shared = [(shared_rng or rng).randrange(alphabet_size) for _ in range(shared_prefix_len)]
    for k, length in enumerate(lengths):
        head = shared + unique.symbols(first_number + k)
        rest = max(0, length - len(head))
        yield (head + [rng.randrange(alphabet_size) for _ in range(rest)])[:max(length, len(head))]


async def build_workload(tokenizer: Tokenizer | None, count: int, input_len: int,
                         seed: int = 0, parallel: int = 8, *, shared_prefix_len: int = 0,
                         range_ratio: float = 0.0, output_len: int | None = None,
                         first_number: int = 0, total: int | None = None,
                         run_seed: int | None = None) -> Workload:
    """`count` random prompts of `input_len` tokens (exact when the server tokenizes), none alike.

    `first_number`/`total` number the prompts across a whole run and
    `run_seed` (the same for every level) fixes the scrambling and the shared
    prefix, so no two levels share a unique prefix either.
    """
    rng = random.Random(seed)
    shared_rng = random.Random(f"{seed if run_seed is None else run_seed}-run")
    lengths = lengths_for(rng, count, input_len, range_ratio)
    outputs = lengths_for(rng, count, output_len, range_ratio) if output_len and range_ratio > 0 else None
    if tokenizer is None or tokenizer.dialect is None:
        prompts = []
        for p in iter_symbol_prompts(len(_WORDS), lengths, rng, shared_prefix_len=shared_prefix_len,
                                     first_number=first_number, total=total, shared_rng=shared_rng):
            prompts.append(" ".join([_WORDS[i] for i in p]))
            await asyncio.sleep(0)   # a large level takes seconds to build: a stop must not wait for it
        return Workload(prompts, input_len, "approximate", [None] * count, outputs)
    alphabet = await token_alphabet(tokenizer)
    symbols = symbol_prompts(len(alphabet), lengths, rng, shared_prefix_len=shared_prefix_len,
                             first_number=first_number, total=total, shared_rng=shared_rng)
    gate = asyncio.Semaphore(parallel)

    async def one(p: list[int], length: int) -> tuple[str, int]:
        async with gate:
            return await _exact_prompt(tokenizer, [alphabet[i] for i in p], length)

    made = await asyncio.gather(*(one(p, n) for p, n in zip(symbols, lengths)))
    prompts = [text for text, _ in made]
    got = [n for _, n in made]
    method = "tokenize" if all(n == want for n, want in zip(got, lengths)) else "approximate"
    return Workload(prompts, input_len, method, got, outputs)


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


# ---------------------------------------------------------------- datasets


def draw(size: int, count: int, seed: int) -> list[int]:
    """`count` positions among `size` prompts: all different while the file has enough, else
    every prompt once in a shuffled order, over and over. Never a list of the whole file's size
    when it is larger than the level."""
    rng = random.Random(seed)
    if count <= size:
        return rng.sample(range(size), count)
    order = list(range(size))
    rng.shuffle(order)
    return [order[k % size] for k in range(count)]


def _text_of(prompt: str | list) -> str:
    return prompt if isinstance(prompt, str) else "\n".join(m["content"] for m in prompt)


async def dataset_workload(items: "Sequence[DatasetItem] | Dataset", tokenizer: Tokenizer | None, count: int,
                           output_len: int, seed: int = 0, fixed_output: bool = False,
                           parallel: int = 8) -> Workload:
    """`count` requests drawn from a dataset (at random with the seed, cycled when it is short).

    `items` is the prompts themselves or a checked file (`Dataset`), which is
    read for the drawn prompts only. Input lengths are the server's token
    counts when it tokenizes (for chat messages, the contents without the chat
    template: approximate); else about 4 characters a token, flagged
    approximate. A ShareGPT reply's length sets the output length unless
    `fixed_output`.
    """
    positions = draw(len(items), count, seed)
    if isinstance(items, Dataset):
        picked = await asyncio.to_thread(items.take, positions)
    else:
        picked = [items[k] for k in positions]
    exact = tokenizer is not None and tokenizer.dialect is not None
    gate = asyncio.Semaphore(parallel)

    async def count_tokens(text: str) -> int:
        if not exact:
            return max(1, round(len(text) / 4))
        async with gate:
            return len(await tokenizer.tokenize(text))

    lengths = await asyncio.gather(*(count_tokens(_text_of(it.prompt)) for it in picked))
    outputs = []
    for it in picked:
        if it.output_len is not None and not fixed_output:
            outputs.append(it.output_len)
        elif it.reply is not None and not fixed_output:
            outputs.append(max(1, await count_tokens(it.reply)))
        else:
            outputs.append(output_len)
    method = "tokenize" if exact and all(isinstance(it.prompt, str) for it in picked) else "approximate"
    mean_len = round(sum(lengths) / len(lengths)) if lengths else 0
    return Workload([it.prompt for it in picked], mean_len, method, list(lengths), outputs)
