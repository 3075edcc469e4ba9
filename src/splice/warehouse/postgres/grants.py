"""The statements of an access grant on PostgreSQL, built with sqlglot, and running them.

A grant gets a role of its own (``NOLOGIN``), holding exactly what was approved: ``USAGE`` on
each schema and ``SELECT`` on each relation; the grantee is made a member of it.  Revoking drops
that role (``DROP OWNED BY`` first, which takes back every privilege it holds in the database),
so access ends however the relations changed meanwhile, and a revoke run twice does no harm.

A SQLMesh model's relation is a view over its physical table; PostgreSQL checks a view's reads
as the view's owner, so ``SELECT`` on the view is all a reader needs.

>>> print(grant_statements("splice_ag_1_ab", "analyst", ["marts.agg_gmv_daily"])[:2])
['CREATE ROLE "splice_ag_1_ab" NOLOGIN', 'GRANT USAGE ON SCHEMA "marts" TO "splice_ag_1_ab"']
>>> grant_statements("r", "analyst", ["marts.agg_gmv_daily"])[2:]
['GRANT SELECT ON TABLE "marts"."agg_gmv_daily" TO "r"', 'GRANT "r" TO "analyst"']
>>> revoke_statements("r")
['DROP OWNED BY "r"', 'DROP ROLE "r"']
"""

from __future__ import annotations

import secrets
from typing import Any

from sqlglot import exp

from splice.errors import GrantError

DIALECT = "postgres"


def _ident(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(DIALECT)


def _table(relation: str) -> exp.Table:
    schema, name = relation.split(".", 1)
    return exp.Table(this=exp.to_identifier(name, quoted=True),
                     db=exp.to_identifier(schema, quoted=True))  # fmt: skip


def _principal(role: str) -> exp.GrantPrincipal:
    return exp.GrantPrincipal(this=exp.to_identifier(role, quoted=True))


def _privilege(name: str) -> exp.GrantPrivilege:
    return exp.GrantPrivilege(this=exp.var(name))


def role_for(grant_id: str, prefix: str = "splice_") -> str:
    """A new role name for a grant: its id and a random part (roles are per server, and two
    workspaces on one server both have an AG-1).

    >>> role_for("AG-12")[:13], len(role_for("AG-12"))
    ('splice_ag_12_', 21)
    """
    return f"{prefix}{grant_id.lower().replace('-', '_')}_{secrets.token_hex(4)}"


def grant_statements(role: str, grantee: str, relations: list[str]) -> list[str]:
    """Make ``role``, give it read access to exactly ``relations``, and ``grantee`` the role."""
    out = [exp.Command(this="CREATE", expression=f"ROLE {_ident(role)} NOLOGIN").sql(DIALECT)]
    for schema in dict.fromkeys(r.split(".", 1)[0] for r in relations):
        out.append(exp.Grant(privileges=[_privilege("USAGE")], kind="SCHEMA",
                             securable=exp.Table(this=exp.to_identifier(schema, quoted=True)),
                             principals=[_principal(role)]).sql(DIALECT))  # fmt: skip
    for rel in relations:
        out.append(exp.Grant(privileges=[_privilege("SELECT")], kind="TABLE",
                             securable=_table(rel), principals=[_principal(role)]).sql(DIALECT))  # fmt: skip
    out.append(
        exp.Command(this="GRANT", expression=f"{_ident(role)} TO {_ident(grantee)}").sql(DIALECT)
    )
    return out


def reassert_statements(role: str, relations: list[str]) -> list[str]:
    """The privileges of ``role`` again (a relation rebuilt by its tool, dropped and created
    anew, lost what was granted on it); GRANT of a privilege held already changes nothing.

    >>> reassert_statements("r", ["marts.a"])
    ['GRANT USAGE ON SCHEMA "marts" TO "r"', 'GRANT SELECT ON TABLE "marts"."a" TO "r"']
    """
    return grant_statements(role, "-", relations)[1:-1]


def revoke_statements(role: str) -> list[str]:
    """Take back everything ``role`` was given, then drop it (its members lose it too)."""
    return [exp.Command(this="DROP", expression=f"OWNED BY {_ident(role)}").sql(DIALECT),
            exp.Command(this="DROP", expression=f"ROLE {_ident(role)}").sql(DIALECT)]  # fmt: skip


def role_query(name: str) -> str:
    """
    >>> role_query("analyst")
    "SELECT rolsuper, rolcanlogin FROM pg_catalog.pg_roles WHERE rolname = 'analyst'"
    """
    return (exp.select("rolsuper", "rolcanlogin").from_("pg_catalog.pg_roles")
            .where(exp.column("rolname").eq(exp.Literal.string(name))).sql(DIALECT))  # fmt: skip


def exists_query(relation: str) -> str:
    """
    >>> exists_query("marts.agg")
    'SELECT TO_REGCLASS(\\'"marts"."agg"\\') IS NULL'
    """
    text = _table(relation).sql(DIALECT)
    return exp.select(exp.func("to_regclass", exp.Literal.string(text)).is_(exp.null())).sql(
        DIALECT
    )


def role_exists(con: Any, name: str) -> tuple[bool, bool] | None:
    """(superuser, can log in) of role ``name``, or None when the server has no such role."""
    row = con.execute(role_query(name)).fetchone()
    return None if row is None else (bool(row[0]), bool(row[1]))


def missing(con: Any, relations: list[str]) -> list[str]:
    """The relations the warehouse does not have."""
    return [r for r in relations if con.execute(exists_query(r)).fetchone()[0]]


def run(con: Any, statements: list[str], what: str) -> None:
    """Run ``statements`` in one transaction: all of them hold, or none does."""
    import psycopg

    try:
        with con.transaction():
            for sql in statements:
                con.execute(sql)
    except psycopg.Error as e:
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise GrantError(
            f"{what}: the warehouse refused it ({text}); nothing of it was done.",
            fix="the user in [warehouse] needs CREATEROLE and to own (or hold with GRANT "
            "OPTION) the relations; correct that and try again",
            retry=True,
        ) from None
