"""splice.api's public surface is what its ``__all__`` says: every exported name resolves to the
object its re-export table names, nothing public is offered outside ``__all__``, no name is
defined twice, and importing the api loads none of the layers below it."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import types
from pathlib import Path

from splice import api

SOURCE = Path(api.__file__)


def _tree() -> ast.Module:
    return ast.parse(SOURCE.read_text())


def _table_keys() -> list[str]:
    """The keys of ``_EXPORTS`` as written (a dict literal keeps only the last of a repeat)."""
    for node in _tree().body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "_EXPORTS":
            assert isinstance(node.value, ast.Dict)
            return [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
    raise AssertionError("splice.api has no _EXPORTS table")


def _type_checking_names() -> list[str]:
    """The names the ``if TYPE_CHECKING:`` block imports (what mypy and IDEs see)."""
    names: list[str] = []
    for node in _tree().body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                names += [a.asname or a.name for a in imp.names]
    return names


def test_all_is_the_public_names_offered() -> None:
    for name in api.__all__:
        getattr(api, name)  # every name resolves (and is now kept in the module)
    public = {
        n
        for n, v in vars(api).items()
        if not n.startswith("_") and not isinstance(v, types.ModuleType)
    }
    assert sorted(api.__all__, key=str.casefold) == api.__all__
    assert set(api.__all__) == public
    assert set(api.__all__) == set(_table_keys())


def test_each_name_is_the_object_its_table_names() -> None:
    for name, spec in api._EXPORTS.items():
        module, attr = spec.split(":")
        assert getattr(api, name) is getattr(importlib.import_module(module), attr), name


def test_no_name_is_defined_twice() -> None:
    keys, typed = _table_keys(), _type_checking_names()
    assert len(keys) == len(set(keys)), [k for k in keys if keys.count(k) > 1]
    assert len(typed) == len(set(typed)), [k for k in typed if typed.count(k) > 1]
    assert set(typed) == set(keys), set(typed) ^ set(keys)
    defined = [n.name for n in _tree().body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    defined += [
        t.id for n in _tree().body if isinstance(n, ast.Assign) for t in n.targets
        if isinstance(t, ast.Name)
    ]  # fmt: skip
    assert not set(defined) & set(keys), "a name both written here and re-exported"


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        api.no_such_operation  # noqa: B018
    except AttributeError as e:
        assert "no_such_operation" in str(e)
    else:
        raise AssertionError("an unknown name resolved")


def test_importing_the_api_stays_light() -> None:
    code = (
        "import sys, splice.api\n"
        "heavy = ('splice.run', 'splice.repair', 'splice.watch', 'splice.providers', 'sqlmesh',"
        " 'dbt', 'duckdb', 'psycopg')\n"
        "print([m for m in sys.modules if m.startswith(heavy)])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
