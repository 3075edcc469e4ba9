"""The keys that sign audit-log entries: a PEM file made 0600, a key in an environment variable,
a KMS-style command (checked against the public key it claims), and bad keys refused with one
line."""

from __future__ import annotations

import base64
import stat
import sys
from pathlib import Path

import pytest

from splice.errors import ConfigError, StateError
from splice.state import signing


def test_a_missing_key_file_is_made_private_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "serve.pem"
    first = signing.from_file(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = signing.from_file(path)
    assert again.key_id == first.key_id
    sig = first.sign(signing.message("ab" * 32))
    assert signing.verify(again.key_id, signing.message("ab" * 32), sig)
    other = signing.from_file(tmp_path / "other.pem")
    assert not signing.verify(other.key_id, signing.message("ab" * 32), sig)


def test_a_key_from_the_environment_pem_or_raw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cryptography.hazmat.primitives import serialization

    made = signing.from_file(tmp_path / "k.pem")
    pem = (tmp_path / "k.pem").read_text()
    monkeypatch.setenv("SERVE_KEY", pem)
    assert signing.from_env("SERVE_KEY").key_id == made.key_id
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    raw = key.private_bytes(  # type: ignore[union-attr]
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    monkeypatch.setenv("SERVE_KEY", base64.b64encode(raw).decode())
    assert signing.from_env("SERVE_KEY").key_id == made.key_id
    monkeypatch.setenv("SERVE_KEY", "not a key")
    with pytest.raises(ConfigError) as e:
        signing.from_env("SERVE_KEY")
    assert "$SERVE_KEY" in e.value.message and "Ed25519" in e.value.message
    monkeypatch.delenv("SERVE_KEY")
    with pytest.raises(ConfigError) as e:
        signing.from_env("SERVE_KEY")
    assert "not set" in e.value.message


def _signing_command(tmp_path: Path, key: Path) -> list[str]:
    """A stand-in for a KMS client: a separate program holding the key, signing stdin."""
    script = tmp_path / "kms.py"
    script.write_text(
        "import base64, sys\n"
        "from cryptography.hazmat.primitives import serialization\n"
        f"k = serialization.load_pem_private_key(open({str(key)!r}, 'rb').read(), None)\n"
        "print(base64.b64encode(k.sign(sys.stdin.buffer.read())).decode())\n"
    )
    return [sys.executable, str(script)]


def test_a_kms_style_command_signs_and_must_match_its_public_key(tmp_path: Path) -> None:
    held = signing.from_file(tmp_path / "held.pem")
    cmd = _signing_command(tmp_path, tmp_path / "held.pem")
    s = signing.from_command(cmd, held.key_id)
    sig = s.sign(signing.message("cd" * 32))
    assert signing.verify(held.key_id, signing.message("cd" * 32), sig)
    # the command signs with another key than the one named: refused, not recorded
    other = signing.from_file(tmp_path / "other.pem")
    with pytest.raises(StateError) as e:
        signing.from_command(cmd, other.key_id).sign(b"x")
    assert "another key" in e.value.message
    with pytest.raises(ConfigError):
        signing.from_command(cmd, "")


def test_a_key_file_that_is_not_a_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("hello")
    with pytest.raises(ConfigError) as e:
        signing.from_file(bad)
    assert str(bad) in e.value.message
