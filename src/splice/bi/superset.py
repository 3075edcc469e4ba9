"""Apache Superset through its REST API (``/api/v1/``): signing in, what changed, a full read.

:class:`Superset` signs in as ``[[bi]] username`` with the password in the environment
variable ``password_env`` (a JWT, as Superset's own front end does), and reads:

- :meth:`Superset.markers`: the tool's own change markers, three list calls (dashboards, charts
  and datasets with their ``changed_on_utc``), hashed: what a reading command asks to know
  whether its last read still holds;
- :meth:`Superset.read`: every dashboard (or those ``[[bi]] dashboards`` names), its charts with
  their ``form_data``, the dataset under each chart (physical: its schema and table; virtual:
  its SQL) and the backend of the dataset's database (the SQL's dialect).

Errors are :class:`splice.errors.BIError` naming the tool, its URL and what to do; whether a
retry can help follows the HTTP answer (no answer or a 5xx: yes; a refused sign-in: no).
The REST shapes this relies on are written down in :mod:`splice.bi.superset_seed`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from splice.config.bi import BISection
from splice.errors import BIError
from splice.support import http

PAGE = 100


def rison(value: Any) -> str:
    """``value`` as Rison (what Superset's ``q=`` takes); strings always quoted.

    >>> rison({"filters": [{"col": "name", "opr": "eq", "value": "it's GMV!"}], "page": 0})
    "(filters:!((col:'name',opr:'eq',value:'it!'s GMV!!')),page:0)"
    >>> rison([True, False, None, 1.5])
    '!(!t,!f,!n,1.5)'
    """
    if value is True:
        return "!t"
    if value is False:
        return "!f"
    if value is None:
        return "!n"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("!", "!!").replace("'", "!'") + "'"
    if isinstance(value, dict):
        return "(" + ",".join(f"{k}:{rison(v)}" for k, v in value.items()) + ")"
    if isinstance(value, list | tuple):
        return "!(" + ",".join(rison(v) for v in value) + ")"
    raise TypeError(f"no Rison for {type(value).__name__}")


def credentials(cfg: BISection, env: Mapping[str, str] | None = None,
                root: Path | None = None) -> tuple[str, str]:  # fmt: skip
    """(user, password) for ``cfg``, from splice.toml and the environment (a local Superset's:
    from its home, ``admin.json``); a one-line error saying where it looked."""
    env = os.environ if env is None else env
    if cfg.local and not cfg.password_env:
        kept = (root or Path.cwd()) / cfg.local / "admin.json"
        try:
            got = json.loads(kept.read_text())
            return str(got["username"]), str(got["password"])
        except (OSError, ValueError, KeyError):
            raise BIError(
                f"bi {cfg.name!r}: the local Superset's credentials are not in {kept}.",
                fix="build the demo again (splice demo DIR --bi superset), or set username "
                "and password_env",
            ) from None
    user = cfg.username or (env.get(cfg.username_env) if cfg.username_env else None)
    if not user:
        raise BIError(
            f"bi {cfg.name!r}: no user name to sign in to {cfg.url} (looked at "
            f"username in splice.toml and ${cfg.username_env or '(no username_env)'}).",
            fix=f"set [[bi]] username, or export {cfg.username_env or 'the username_env variable'}",
        )
    name = cfg.password_env or ""
    password = env.get(name) if name else None
    if not password:
        raise BIError(
            f"bi {cfg.name!r}: the password for {user} at {cfg.url} is not set (looked at "
            f"${name}).",
            fix=f"export {name}=... in the environment Splice runs in",
        )
    return user, password


class Superset:
    """One Superset, signed in (lazily, on the first call)."""

    def __init__(self, cfg: BISection, env: Mapping[str, str] | None = None,
                 root: Path | None = None) -> None:  # fmt: skip
        self.cfg = cfg
        self.url = cfg.url
        self._env = env
        self._root = root
        self._headers: dict[str, str] | None = None

    # -- calls ----------------------------------------------------------------------------
    def _fail(self, what: str, e: http.HTTPFailure) -> BIError:
        status = getattr(e, "status", None)
        if isinstance(e, http.NoAnswer):
            return BIError(
                f"bi {self.cfg.name!r}: Superset at {self.url} does not answer ({e.reason}).",
                fix="start it, or correct [[bi]] url; Splice keeps its last read meanwhile",
                retry=True,
            )
        if status in (401, 403):
            return BIError(
                f"bi {self.cfg.name!r}: Superset at {self.url} refused {what} ({status}): "
                "wrong user or password, or a user without access.",
                fix=f"check [[bi]] username and ${self.cfg.password_env}",
            )
        return BIError(
            f"bi {self.cfg.name!r}: Superset at {self.url} refused {what}: {e.message}",
            fix="read Superset's log; a retry may help" if e.retry else "read Superset's log",
            retry=e.retry,
        )

    #: how long a kept access token is used (Superset's own expire after 15 minutes)
    TOKEN_TTL = 600.0

    def _token_file(self) -> Path | None:
        """Where the access token is kept between commands (in the workspace, this user's
        only): signing in costs Superset a password hash, a third of a second."""
        return self._root / ".splice" / "bi" / f"{self.cfg.name}.token" if self._root else None

    def _login(self, *, fresh: bool = False) -> dict[str, str]:
        import time

        if self._headers is not None and not fresh:
            return self._headers
        user, password = credentials(self.cfg, self._env, self._root)
        who = hashlib.sha256(f"{self.url}\0{user}\0{password}".encode()).hexdigest()
        kept = self._token_file()
        if kept is not None and not fresh:
            try:
                got = json.loads(kept.read_text())
                if got["who"] == who and time.time() - float(got["at"]) < self.TOKEN_TTL:
                    self._headers = {"Authorization": f"Bearer {got['token']}"}
                    return self._headers
            except (OSError, ValueError, KeyError):
                pass
        body = {"username": user, "password": password, "provider": "db", "refresh": True}
        try:
            r = http.request("POST", f"{self.url}/api/v1/security/login", json=body,
                             timeout=30, retry=http.ONCE)  # fmt: skip
        except http.HTTPFailure as e:
            raise self._fail(f"the sign-in of {user}", e) from None
        token = str(r.json()["access_token"])
        self._headers = {"Authorization": f"Bearer {token}"}
        if kept is not None:
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.touch(mode=0o600)
            kept.write_text(json.dumps({"who": who, "at": time.time(), "token": token}))
        return self._headers

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """One JSON call as the signed-in user (signed in again once if Superset no longer
        takes the kept token)."""
        for attempt in (0, 1):
            headers = self._login(fresh=attempt == 1)
            try:
                r = http.request(method, self.url + path, json=body, headers=headers,
                                 timeout=60)  # fmt: skip
            except http.ErrorStatus as e:
                if e.status == 401 and attempt == 0:
                    continue
                raise self._fail(f"{method} {path.split('?')[0]}", e) from None
            except http.HTTPFailure as e:
                raise self._fail(f"{method} {path.split('?')[0]}", e) from None
            return r.json()
        raise AssertionError("unreachable")

    def listing(self, kind: str, columns: list[str], **q: Any) -> list[dict[str, Any]]:
        """Every ``kind`` object (dashboard, chart, dataset, ...), page by page."""
        out: list[dict[str, Any]] = []
        page = 0
        while True:
            query = rison({"columns": columns, "page": page, "page_size": PAGE, **q})
            got = self.call("GET", f"/api/v1/{kind}/?q={quote(query)}")
            rows = list(got.get("result") or [])
            out += rows
            if len(rows) < PAGE or len(out) >= int(got.get("count") or 0):
                return out
            page += 1

    # -- reading -------------------------------------------------------------------------
    def markers(self) -> str:
        """A hash of every dashboard's, chart's and dataset's id and ``changed_on_utc``."""
        h = hashlib.sha256()
        for kind in ("dashboard", "chart", "dataset"):
            rows = self.listing(kind, ["id", "changed_on_utc"])
            h.update(kind.encode())
            for r in sorted(rows, key=lambda r: int(r["id"])):
                h.update(f"{r['id']}@{r.get('changed_on_utc')}".encode())
        h.update(json.dumps(sorted(self.cfg.dashboards)).encode())
        return h.hexdigest()[:24]

    def _wanted(self, d: dict[str, Any]) -> bool:
        want = self.cfg.dashboards
        return not want or str(d["id"]) in want or str(d.get("dashboard_title")) in want

    def read(self, marker: str | None = None) -> dict[str, Any]:
        """Dashboards, their charts and the datasets under them (see the module doc);
        ``marker``: :meth:`markers`, when the caller has just asked for it."""
        marker = marker or self.markers()
        dashboards = [d for d in self.listing(
            "dashboard", ["id", "dashboard_title", "slug", "url", "changed_on_utc", "published"])
            if self._wanted(d)]  # fmt: skip
        datasets: dict[int, dict[str, Any]] = {}
        charts: dict[int, dict[str, Any]] = {}
        out_dash = []
        for d in sorted(dashboards, key=lambda d: int(d["id"])):
            mine = self.call("GET", f"/api/v1/dashboard/{d['id']}/charts").get("result") or []
            ids = []
            for c in mine:
                cid = int(c["id"])
                ids.append(cid)
                if cid in charts:
                    charts[cid]["dashboards"].append(int(d["id"]))
                    continue
                form = c.get("form_data") or {}
                source = str(form.get("datasource") or "")
                ds_id = int(source.split("__")[0]) if source.split("__")[0].isdigit() else None
                if ds_id is not None and ds_id not in datasets:
                    datasets[ds_id] = self._dataset(ds_id)
                charts[cid] = {
                    "id": cid, "name": c.get("slice_name") or f"chart {cid}",
                    "url": self.url + str(c.get("slice_url") or f"/explore/?slice_id={cid}"),
                    "changed_on": c.get("changed_on"), "viz_type": form.get("viz_type"),
                    "dataset": ds_id, "form_data": _form(form), "dashboards": [int(d["id"])],
                }  # fmt: skip
            out_dash.append({
                "id": int(d["id"]), "title": d.get("dashboard_title") or f"dashboard {d['id']}",
                "slug": d.get("slug"), "url": self.url + str(d.get("url") or
                                                            f"/superset/dashboard/{d['id']}/"),
                "changed_on": d.get("changed_on_utc"), "charts": ids,
            })  # fmt: skip
        return {"tool": "superset", "url": self.url, "marker": marker, "dashboards": out_dash,
                "charts": [charts[k] for k in sorted(charts)],
                "datasets": [datasets[k] for k in sorted(datasets)]}  # fmt: skip

    def _dataset(self, ds_id: int) -> dict[str, Any]:
        r = self.call("GET", f"/api/v1/dataset/{ds_id}")["result"]
        db = r.get("database") or {}
        return {
            "id": ds_id, "kind": r.get("kind") or ("virtual" if r.get("sql") else "physical"),
            "name": r.get("table_name"), "schema": r.get("schema"), "catalog": r.get("catalog"),
            "sql": r.get("sql") or None, "database": db.get("database_name"),
            "backend": db.get("backend"),
            "columns": {c["column_name"]: c.get("expression") or None
                        for c in r.get("columns") or []},
            "metrics": {m["metric_name"]: m.get("expression") for m in r.get("metrics") or []},
        }  # fmt: skip


#: the parts of a chart's form_data that say which columns it shows
FORM_KEYS = ("x_axis", "granularity_sqla", "groupby", "columns", "all_columns", "metrics",
             "metric", "series", "entity", "x", "y", "size", "secondary_metric", "percent_metrics",
             "timeseries_limit_metric")  # fmt: skip


def _form(form: dict[str, Any]) -> dict[str, Any]:
    return {k: form[k] for k in FORM_KEYS if form.get(k) not in (None, [], "")}
