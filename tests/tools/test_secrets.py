"""The secret detector: credentials are caught; prose and everyday technical text are not."""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.tools.memory.secrets import REDACTED, looks_like_secret, redact, secret_spans


def _random_token(rng: random.Random, n: int, alphabet: str) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


_RNG = random.Random(20240501)
_B62 = string.ascii_letters + string.digits

SECRETS = [
    # assignments
    "password=hunter2",
    "passwd: swordfish",
    "secret=abc",
    "token=Zx9Qa",
    "api_key=abcd1234efgh",
    "API-KEY = 9f8e7d6c5b4a",
    "export GITHUB_TOKEN=ghp_" + "a1B2" * 9,
    "DB_PASSWORD='pa55word'",
    '{"password": "correct horse battery staple"}',
    "client_secret: 'x9y8z7'",
    "The token: abc123 expires tomorrow",
    "access_token=ya29.a0AfH6SMBx",
    # PEM blocks
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY-----",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----",
    # JWT
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    # provider prefixes
    "sk-" + _random_token(_RNG, 40, _B62),
    "use sk-proj-" + _random_token(_RNG, 40, _B62 + "-_"),
    "ghp_" + "A1b2C3d4" * 5,
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "xoxb-1234567890-abcdefghij",
    "AKIAIOSFODNN7EXAMPLE",
    "tiny_live_9f8e7d6c5b4a",
    "ctx_4f9a8b7c6d5e",
    "AIzaSyA1234567890abcdefghijklmnopqrstu",
    "glpat-abc123def456ghi789jk",
    # bearer values
    "Authorization: Bearer abc123def456ghi789jkl",
    # high entropy
    "the key is " + _random_token(_RNG, 40, _B62),
    base64.b64encode(bytes(_RNG.getrandbits(8) for _ in range(40))).decode(),
]

PROSE = [
    "The user prefers concise answers and dark mode.",
    "Remember the password: it is on the sticky note in the office.",
    "We rotate the secret: rotation happens monthly.",
    "Our secret sauce is good tests.",
    "Passwords must be at least 12 characters long.",
    "The tokens are counted per request.",
    "The secret: keep it short.",
    "password: see the vault",
    "Bearer tokens go in the Authorization header.",
    "JWTs have three parts separated by dots.",
    "The AKIA prefix marks AWS access keys.",
    "The task-force meets on Tuesday; the plan is risk-free.",
    "Alice asked for a summary of the quarterly report by Friday.",
    "Her favourite colour is green and she lives in Lisbon.",
    "Don't share your API key with anyone, ever.",
    "The meeting moved to 3 pm because of the token ring outage in building 7.",
    "Keep it secret, keep it safe.",
]

TECHNICAL = [
    "Set max_tokens=512 for the summariser.",
    "token_count=5 and secret_length: 32",
    "Commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f fixed the bug.",
    "Item id 0123456789abcdef0123456789abcdef01234567 and uuid " + str(uuid.UUID(int=12345)),
    "sha256: " + hashlib.sha256(b"x").hexdigest(),
    "Paths: /usr/local/lib/python3.11/site-packages/cortex_memory/tools/memory/secrets.py",
    "See https://github.com/owner/repo/blob/main/src/components/UserProfileAvatar2x.tsx",
    "class AbstractSingletonProxyFactoryBean2 extends Base",
    "Use scikit-learn; sk-learn is not a package name.",
    "ctx_manager_helpers handles it",
    "Use the api_key from the environment: api_key=os.environ['OPENAI_API_KEY']",
    "Set password=<your password> in config",
    "token: ${GITHUB_TOKEN}",
    "Run `pytest -k test_token_refresh --maxfail=1`",
    "getUserAccountSettingsFromCacheOrDatabase2 returns None",
    "docker run -e POSTGRES_PASSWORD_FILE=/run/secrets/pg postgres:16",
    "the function takes timeout=30, retries=3",
    "version 1.2.3-beta.4+build.567890",
    "ISO time 2024-05-01T12:34:56.789Z",
    "base64 of hello is aGVsbG8=",
    "SELECT id, version FROM memories WHERE id = ? ORDER BY id",
    "git log --oneline | head -20 && git status --short",
    "The CI matrix runs Python 3.9, 3.10, 3.11 and 3.12 on ubuntu-22.04.",
    "Namespace team:acme/agent:writer inherits from team:acme.",
    "HTTP 429 means rate limited; back off with jitter (250ms, 500ms, 1s).",
    "pip install 'urllib3>=2' tomli; python -m pytest -q tests/tools",
]


@pytest.mark.parametrize("text", SECRETS)
def test_secrets_are_detected(text: str) -> None:
    assert looks_like_secret(text)


@pytest.mark.parametrize("text", PROSE + TECHNICAL)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert not looks_like_secret(text), secret_spans(text)


def test_redact_keeps_the_key_and_hides_the_value() -> None:
    assert redact("login failed: password=hunter2 for alice") == (
        f"login failed: password={REDACTED} for alice"
    )
    token = "ghp_" + "A1b2C3d4" * 5
    assert redact(f"pushed with {token} today") == f"pushed with {REDACTED} today"
    assert redact("nothing to hide here") == "nothing to hide here"


def test_redact_merges_overlapping_spans() -> None:
    token = "sk-" + "Ab1" * 15
    text = f"api_key={token}"
    assert redact(text) == f"api_key={REDACTED}"
    assert len(secret_spans(text)) == 1


_WORDS = [
    "the", "user", "prefers", "short", "answers", "meeting", "moved", "to", "Friday",
    "build", "uses", "make", "and", "tests", "run", "on", "every", "push", "Alice", "likes",
    "green", "tea", "in", "the", "morning", "deploy", "window", "is", "closed", "after", "5",
    "pm", "reports", "are", "due", "quarterly", "memory", "keys", "stay", "stable",
]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=40),
       st.sampled_from([".", "!", "?", ";", ",", ":"]))
def test_generated_prose_is_never_a_secret(words: list, end: str) -> None:
    sentence = " ".join(words).capitalize() + end
    assert not looks_like_secret(sentence)
