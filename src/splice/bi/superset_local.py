"""A local Apache Superset for the demo and the tests (never a team's Superset).

``superset run`` (Flask's threaded server) on 127.0.0.1 at ``url``'s port, with
``SUPERSET_HOME`` and its SQLite metadata database in ``home``, started and stopped as one
process group as :mod:`splice.orchestrators.local_server` says. Before the first start in a
home it migrates the metadata database (``superset db upgrade``), creates the admin user
(``superset fab create-admin``; the password reset when the user exists) and syncs the roles
(``superset init``); a home keeps a stamp of that (``home/initialized``: the Superset version
and the admin's user and password, hashed), so a later start in the same home only serves
(measured on 2 cores: about 4 s to answer ``/health``, against 24-27 s for the first start).
No examples are loaded.

``home/superset_config.py`` (written at each start, mode 0600) holds the secret key (made once,
kept in ``home/secret_key``), the metadata database, and CSRF protection off: Splice speaks to
the REST API with a JWT (``/api/v1/security/login``) and no session cookie. Annotation layers
and the dashboard API need no feature flag in Superset 6.1.0.

Superset pins SQLAlchemy 1.4 and is not installed beside Splice: the ``superset`` command is
``$SPLICE_SUPERSET``, else ``superset`` next to this Python, else on ``PATH``
(``make superset`` builds ``.venv-superset``).
"""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path
from urllib.parse import urlsplit

from splice.config.bi import BISection
from splice.orchestrators import local_server
from splice.orchestrators.local_server import LocalServer

#: What runs (``sh`` in ``home``, with ``$SUPERSET`` the command): the one-time setup unless
#: the home's stamp matches, then the server in place of the shell (``stop`` ends its group).
LAUNCH = """\
set -e
if [ "$(cat initialized 2>/dev/null)" != "$SPLICE_SUPERSET_STAMP" ]; then
  "$SUPERSET" db upgrade
  out=$("$SUPERSET" fab create-admin --username "$SPLICE_SUPERSET_USER" --firstname a \
--lastname b --email a@example.com --password "$SPLICE_SUPERSET_PASSWORD" 2>&1)
  echo "$out"
  case "$out" in
    *"already exists"*) "$SUPERSET" fab reset-password --username "$SPLICE_SUPERSET_USER" \
--password "$SPLICE_SUPERSET_PASSWORD" ;;
    *"created"*) ;;
    *) exit 1 ;;
  esac
  "$SUPERSET" init
  printf '%s' "$SPLICE_SUPERSET_STAMP" > initialized
fi
exec "$SUPERSET" run -h 127.0.0.1 -p "$SPLICE_SUPERSET_PORT" --with-threads
"""

CONFIG = """\
# The local Superset of a Splice demo or test (written by splice.bi.superset_local).
SECRET_KEY = {secret!r}
SQLALCHEMY_DATABASE_URI = {metadata!r}
# Splice calls the REST API with a JWT and no session cookie: no CSRF token to send.
WTF_CSRF_ENABLED = False
# Served on 127.0.0.1 only: no Content-Security-Policy headers, and no warning about them.
TALISMAN_ENABLED = False
CONTENT_SECURITY_POLICY_WARNING = False
RATELIMIT_STORAGE_URI = "memory://"
# Annotation layers and the dashboard, chart and dataset APIs need no flag in 6.1.0.
FEATURE_FLAGS = {{}}
"""


def superset_command() -> Path:
    """Where the ``superset`` command is (see the module docstring), or a one-line error."""
    from splice.errors import OrchestratorError

    found, looked = local_server.find_command("superset", "SPLICE_SUPERSET", ".venv-superset")
    if found is not None:
        return found
    raise OrchestratorError(
        "a local Superset is served with the `superset` command, but no such command was "
        f"found (looked at {looked}).",
        fix="make superset (builds .venv-superset), or install apache-superset in an "
        "environment of its own and set SPLICE_SUPERSET to its bin/superset",
    )


def _version(superset: Path) -> str:
    """The installed Superset's distribution (``apache_superset-6.1.0``), for the stamp."""
    for d in sorted(superset.resolve().parent.parent.glob("lib/python*/site-packages/*")):
        if d.name.lower().startswith("apache_superset-") and d.suffix == ".dist-info":
            return d.stem
    return str(superset.resolve())


def _config(home: Path) -> None:
    """Write ``home/superset_config.py`` (the secret key made once, in ``home/secret_key``)."""
    key_file = home / "secret_key"
    if not key_file.exists():
        key_file.touch(mode=0o600)
        key_file.write_text(secrets.token_urlsafe(48))
    text = CONFIG.format(secret=key_file.read_text().strip(),
                         metadata=f"sqlite:///{home / 'superset.db'}")  # fmt: skip
    cfg = home / "superset_config.py"
    cfg.touch(mode=0o600)
    cfg.write_text(text)


def server(url: str, home: Path, *, admin_user: str, admin_password: str) -> LocalServer:
    """Superset serving ``home`` on ``url``'s port (``http://127.0.0.1:PORT``), the admin
    ``admin_user`` signing in with ``admin_password`` (:data:`LAUNCH`)."""
    from splice.errors import OrchestratorError

    u = urlsplit(url)
    if u.hostname not in ("127.0.0.1", "localhost") or not u.port:
        raise OrchestratorError(
            f"a local Superset is served on this machine, but url {url} is not 127.0.0.1 "
            "with a port.",
            fix='use url = "http://127.0.0.1:PORT"',
        )
    superset = superset_command()
    home = home.resolve()
    home.mkdir(parents=True, exist_ok=True)  # the home is what it serves (LocalServer.target)
    who = hashlib.sha256(f"{admin_user}\0{admin_password}".encode()).hexdigest()[:16]
    env = {
        "SUPERSET": str(superset),
        "SUPERSET_CONFIG_PATH": str(home / "superset_config.py"),
        "SUPERSET_HOME": str(home),
        "FLASK_APP": "superset",
        "PYTHONPATH": "",  # Superset's environment only, never Splice's packages
        "SPLICE_SUPERSET_PORT": str(u.port),
        "SPLICE_SUPERSET_USER": admin_user,
        "SPLICE_SUPERSET_PASSWORD": admin_password,
        "SPLICE_SUPERSET_STAMP": f"{_version(superset)} {admin_user} {who}",
    }
    return LocalServer("superset", url.rstrip("/"), home, home, ["sh", "-c", LAUNCH], env=env,
                       probe="/health", setup=_config)  # fmt: skip


def stop(home: Path) -> bool:
    """Stop the local Superset recorded in ``home`` (its whole process group). Whether one
    ran."""
    return local_server.stop(home.resolve())


def admin_of(home: Path) -> tuple[str, str]:
    """The local Superset's admin (user, password), made once and kept in ``home/admin.json``
    (readable by this user only)."""
    import json

    kept = home / "admin.json"
    if not kept.exists():
        home.mkdir(parents=True, exist_ok=True)
        kept.touch(mode=0o600)
        kept.write_text(json.dumps({"username": "admin", "password": secrets.token_urlsafe(18)}))
    got = json.loads(kept.read_text())
    return str(got["username"]), str(got["password"])


def start_local(root: Path, cfg: BISection) -> str:
    """Start ``cfg``'s local Superset (``[[bi]] local``: its home in the workspace) unless it
    answers already; its URL."""
    from splice.orchestrators.local_server import ensure_running

    assert cfg.local is not None
    home = (root / cfg.local).resolve()
    user, password = admin_of(home)
    ensure_running(server(cfg.url, home, admin_user=user, admin_password=password), root)
    return cfg.url
