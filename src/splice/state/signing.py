"""Signed audit-log entries: each entry carries an Ed25519 signature by the process that wrote it.

Write access to the state is enough to append an entry with a consistent hash; it is not
enough to sign one with a key the state's writers do not hold. So every entry is signed, over
its hash, by the key of the process that decided it:

- ``splice serve`` signs with the server's key: ``[serve] signing_key`` (a PEM file, created
  with mode 0600 when missing; default ``.splice/keys/serve-ed25519.pem``),
  ``[serve] signing_key_env`` (the PEM, or the raw key in base64, in an environment variable),
  or ``[serve] signing_command`` (a KMS-style command: it reads the message on standard input
  and prints the signature in base64; ``[serve] signing_public_key`` names its public key);
- any other process (the CLI, ``splice mcp``) signs with the workspace's local key
  (``.splice/keys/local-ed25519.pem``, created 0600).

A key is named by its public key: ``ed25519:`` and the 32 raw bytes in base64. With
``[policy] decisions = "server"``, ``splice audit-log verify`` requires every decision entry to
be signed by a key listed in ``[policy] server_keys``: forging an approval then needs the
server's key, not write access to the state.

>>> import tempfile, pathlib
>>> s = from_file(pathlib.Path(tempfile.mkdtemp()) / "k.pem")
>>> sig = s.sign(message("ab" * 32))
>>> verify(s.key_id, message("ab" * 32), sig), verify(s.key_id, message("cd" * 32), sig)
(True, False)
>>> s.key_id.startswith("ed25519:") and len(s.key_id) == 52
True
"""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from splice.errors import ConfigError, StateError

PREFIX = "ed25519:"
LOCAL_KEY = ".splice/keys/local-ed25519.pem"
SERVE_KEY = ".splice/keys/serve-ed25519.pem"


def message(entry_hash: str) -> bytes:
    """What is signed for an entry: its hash, under a fixed label (never a bare hash)."""
    return b"splice-audit-entry\x00" + entry_hash.encode()


def key_id_of(public: object) -> str:
    from cryptography.hazmat.primitives import serialization

    raw = public.public_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return PREFIX + base64.b64encode(raw).decode()


@dataclass(frozen=True)
class Signer:
    """A key that signs entries. ``where``: where it came from, for messages."""

    key_id: str
    where: str
    _sign: Callable[[bytes], bytes]

    def sign(self, data: bytes) -> str:
        return base64.b64encode(self._sign(data)).decode()


def _private_from_pem(data: bytes, where: str) -> object:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        if b"-----BEGIN" in data:
            key = serialization.load_pem_private_key(data, password=None)
        else:
            key = Ed25519PrivateKey.from_private_bytes(
                base64.b64decode(data.strip(), validate=True)
            )
    except (ValueError, TypeError) as e:
        raise ConfigError(
            f"the signing key in {where} is not an Ed25519 private key ({e}).",
            fix="give a PEM file made by Splice (or `openssl genpkey -algorithm ed25519`), or "
            "the 32-byte raw key in base64",
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigError(
            f"the signing key in {where} is not an Ed25519 key.",
            fix="make one with `openssl genpkey -algorithm ed25519`",
        )
    return key


def _signer_of(key: object, where: str) -> Signer:
    return Signer(key_id_of(key.public_key()), where, key.sign)  # type: ignore[attr-defined]


def from_file(path: Path, *, create: bool = True) -> Signer:
    """The key in the PEM file ``path``; a new key is made there (mode 0600) when missing."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if not create:
            raise ConfigError(
                f"the signing key {path} does not exist.",
                fix="give the path of an existing key, or leave the setting out to make one",
            ) from None
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it meanwhile: use theirs
            return from_file(path, create=False)
        except OSError as e:
            raise StateError(
                f"Splice cannot create its signing key {path}: {e.strerror or e}.",
                fix="make the directory writable, or name another key file in splice.toml",
            ) from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(pem)
        return _signer_of(key, str(path))
    except OSError as e:
        raise StateError(
            f"Splice cannot read its signing key {path}: {e.strerror or e}.",
            fix="check the file's permissions",
        ) from None
    return _signer_of(_private_from_pem(data, str(path)), str(path))


def from_env(var: str) -> Signer:
    """The key in environment variable ``var`` (PEM, or the raw key in base64)."""
    value = os.environ.get(var)
    if not value:
        raise ConfigError(
            f"[serve] signing_key_env names {var}, which is not set.",
            fix=f"export {var}=... (the server's Ed25519 private key, PEM or base64)",
        )
    return _signer_of(_private_from_pem(value.encode(), f"${var}"), f"${var}")


def from_command(command: list[str], public_key: str) -> Signer:
    """A key held elsewhere (a KMS, an HSM): ``command`` reads the message on standard input
    and prints its signature in base64; ``public_key`` (``ed25519:...``) names the key."""
    if not public_key.startswith(PREFIX):
        raise ConfigError(
            "[serve] signing_command needs [serve] signing_public_key (ed25519:BASE64).",
            fix="set signing_public_key to the key the command signs with",
        )

    def sign(data: bytes) -> bytes:
        try:
            out = subprocess.run(command, input=data, capture_output=True, timeout=30, check=True)
            sig = base64.b64decode(out.stdout.strip(), validate=True)
        except (OSError, subprocess.SubprocessError, ValueError) as e:
            raise StateError(
                f"[serve] signing_command {command[0]!r} did not sign: {e}.",
                fix="run the command by hand with a message on standard input",
                retry=True,
            ) from None
        if not verify(public_key, data, base64.b64encode(sig).decode()):
            raise StateError(
                f"[serve] signing_command {command[0]!r} signed with another key than "
                "[serve] signing_public_key.",
                fix="set signing_public_key to the command's key",
            )
        return sig

    return Signer(public_key, f"command {command[0]}", sign)


def verify(key_id: str | None, data: bytes, signature: str | None) -> bool:
    """Whether ``signature`` (base64) is ``key_id``'s signature of ``data``."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if not key_id or not signature or not key_id.startswith(PREFIX):
        return False
    try:
        public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key_id[len(PREFIX) :]))
        public.verify(base64.b64decode(signature), data)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


#: The signer of this process when it is not the workspace's local key (``splice serve``).
_PROCESS: Signer | None = None


def use_for_process(signer: Signer | None) -> None:
    """Sign every entry this process writes with ``signer`` (``splice serve`` at start)."""
    global _PROCESS
    _PROCESS = signer


def process_signer() -> Signer | None:
    return _PROCESS
