"""Every third-party package src/splice imports is a declared dependency of splice (in
`dependencies`, or in the optional extra of the feature that needs it: spark, dagster), and
every exact pin in pyproject.toml is the version constraints.txt installs."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "splice"


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    return normalized(re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0])


def declared() -> set[str]:
    """Distributions a user installing splice (with the feature extras) gets by name; the dev
    extra is the test tools, never something Splice may import."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra, reqs in project.get("optional-dependencies", {}).items():
        if extra != "dev":
            requirements += reqs
    return {requirement_name(r) for r in requirements}


def third_party_imports() -> dict[str, list[str]]:
    """Top-level package -> 'file:line' of each absolute import of it (module level and
    inside functions) in src/splice."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top == "splice" or top in sys.stdlib_module_names:
                    continue
                found.setdefault(top, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def undeclared(imports: dict[str, list[str]], names: set[str]) -> list[str]:
    dists = importlib.metadata.packages_distributions()
    problems = []
    for top, where in sorted(imports.items()):
        provided = {normalized(d) for d in dists.get(top, [])}
        if not provided:
            problems.append(f"{top} (imported at {where[0]}) is not installed by any distribution")
        elif not provided & names:
            problems.append(
                f"{top} (imported at {where[0]}) comes from {', '.join(sorted(provided))}, "
                "which pyproject.toml does not declare"
            )
    return problems


def test_every_imported_package_is_declared() -> None:
    imports = third_party_imports()
    # the scan does see the packages the issue named
    assert {"jinja2", "markupsafe", "yaml", "numpy", "pandas", "anyio"} <= set(imports)
    assert undeclared(imports, declared()) == []


def test_an_undeclared_import_is_named() -> None:
    """The check itself: a package imported but left out of pyproject.toml is reported with
    the file and line that imports it."""
    imports = third_party_imports()
    names = declared() - {"jinja2"}
    (problem,) = undeclared(imports, names)
    assert problem.startswith("jinja2 (imported at src/splice/")
    assert "jinja2" in problem and "does not declare" in problem


def test_exact_pins_match_constraints() -> None:
    constraints = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            name, _, version = line.partition("==")
            constraints[normalized(name)] = version.strip()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for reqs in project.get("optional-dependencies", {}).values():
        requirements += reqs
    mismatched = []
    for requirement in requirements:
        if "==" not in requirement:
            continue
        name = requirement_name(requirement)
        version = requirement.split("==", 1)[1].split(";")[0].strip()
        if name in constraints and constraints[name] != version:
            mismatched.append(f"{requirement} but constraints.txt has {constraints[name]}")
    assert mismatched == []
