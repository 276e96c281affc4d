"""Secrets the bench sends never come back in what it prints or saves.

A server that echoes the request's `Authorization` header in an error body
(a 401 page showing what it got) would put the API key into stdout, `--out`,
`runs/*.json` and `requests.jsonl`. Every error text from a server passes
`Redactor.text` before it is kept: the values of the secret-bearing
headers gpudeck sent (by name: Authorization, Cookie, anything naming a
key, token, secret or session) are masked, and so is anything that reads
`Bearer <token>`. A key cut off at the end of a truncated body is masked
too (its first four characters or more), so no readable part survives.
"""
from __future__ import annotations

import re

SECRET_HEADERS = {"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key", "x-auth-token"}
SECRET_WORDS = ("auth", "key", "token", "secret", "cookie", "session", "password", "credential", "signature")
MASK = "[redacted]"
_BEARER = re.compile(r"(?i)\b(bearer)\s+(?!\[redacted\])[A-Za-z0-9._~+/=:-]{4,}")
_SHORTEST = 4      # shorter values would mask ordinary words


class Redactor:
    """Masks the secret header values of one run in any text."""

    def __init__(self, headers: dict[str, str] | None):
        secrets: set[str] = set()
        for name, value in (headers or {}).items():
            lower = name.strip().lower()
            if lower not in SECRET_HEADERS and not any(word in lower for word in SECRET_WORDS):
                continue
            value = value.strip()
            secrets.add(value)
            _scheme, _, token = value.partition(" ")
            secrets.add(token.strip())
        self.secrets = sorted((s for s in secrets if len(s) >= _SHORTEST), key=len, reverse=True)

    def text(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        for secret in self.secrets:   # a key cut off by a length cap: its readable start
            for keep in range(len(secret) - 1, _SHORTEST - 1, -1):
                if text.endswith(secret[:keep]):
                    text = text[:-keep] + MASK
                    break
        return _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)


def redact(text: str, headers: dict[str, str] | None) -> str:
    return Redactor(headers).text(text)
