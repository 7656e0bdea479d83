"""The shape the code keeps: no two modules import each other, no module or function too long,
few enough modules and folders to find one's way, one name per concept, the layer order stated once.

import-linter keeps the layers (pyproject.toml), but it does not see a pair of modules inside
one layer that import each other — lazily inside a function, or only for type checking — and
such a knot is what makes one of them impossible to change alone. So every import of every
module is read here, in any form, and the sizes a reader can hold in mind are checked too.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "cardrunner"
SKIPPED = ("demo/workspace",)
"""Not cardrunner's code: the demo's own project, copied into the user's folder."""
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if any(rel.as_posix().startswith(s) for s in SKIPPED):
            continue
        parts = ["cardrunner", *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every module of ours that `name` imports, anywhere in it, in any form."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {m for m in found if m in MODULES and m != name}


def test_no_two_modules_import_each_other() -> None:
    graph = {name: _imports(name, path) for name, path in MODULES.items()}
    knots = sorted(
        f"{a} <-> {b}" for a, deps in graph.items() for b in deps if a < b and a in graph[b]
    )
    assert knots == [], "modules that import each other (lazily or for types too):\n" + "\n".join(
        knots
    )


def test_the_knot_finder_sees_lazy_and_type_only_imports(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from cardrunner.record.log import RunLog\n"
        "def f():\n    from cardrunner.agent import events\n"
    )
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    assert _imports("cardrunner.probe", probe) == {
        "cardrunner.record.log",
        "cardrunner.agent",
        "cardrunner.agent.events",
    }


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_and_functions_stay_short(name: str) -> None:
    path = MODULES[name]
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n") + (not text.endswith("\n") and bool(text))
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(PACKAGE)}: {lines} lines"
    long = [
        f"{fn.name} ({fn.end_lineno - fn.lineno + 1} lines, line {fn.lineno})"
        for fn in _functions(ast.parse(text))
        if fn.end_lineno is not None and fn.end_lineno - fn.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == [], f"{path.relative_to(PACKAGE)}: functions over {MAX_FUNCTION_LINES} lines"


def _defined(path: Path) -> set[str]:
    """The names a module defines itself at its top level (not those it imports)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                elts = target.elts if isinstance(target, ast.Tuple) else [target]
                names |= {t.id for t in elts if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.If | ast.Try):  # a platform's or a fallback's definition
            names |= {
                n.name
                for n in ast.walk(node)
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            }
    return names


def test_every_name_is_imported_from_where_it_lives() -> None:
    """One import path per public name: taking a name from a module that only imported it
    hides where it lives (and keeps a re-export alive that nobody meant to keep)."""
    sources = [*MODULES.values(), *sorted((PACKAGE.parents[1] / "tests").rglob("*.py"))]
    sources += sorted((PACKAGE.parents[1] / "bench").glob("*.py"))
    defined = {name: _defined(path) for name, path in MODULES.items()}
    wrong = []
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.module not in defined:
                continue
            for alias in node.names:
                here = alias.name in defined[node.module]
                if not here and f"{node.module}.{alias.name}" not in MODULES:
                    wrong.append(f"{path.name}:{node.lineno}: {alias.name} from {node.module}")
    assert wrong == [], "names imported from a module that does not define them:\n" + "\n".join(
        wrong
    )


FRONT_ENDS = {"cli", "lsp", "acp", "terminal", "demo"}
"""A front end may name a module after the core concept it presents (`cli/plan.py` for the plan)."""

MAX_MODULES = 175
"""170 until the private network, the endpoint profile and its request shaping, the evidence that
observed the app, the test runners' own output and a browser server's readiness came as rooms of
their own (172); the margin is for the next concept, not for splitting a module that fits."""
MAX_PER_FOLDER = 15


def modules() -> list[Path]:
    """Every module of the package with more than 8 lines (an `__init__` is a room's name tag)."""
    found = [
        p for p in PACKAGE.rglob("*.py") if not p.is_relative_to(PACKAGE / "demo" / "workspace")
    ]
    return sorted(p for p in found if len(p.read_text(encoding="utf-8").splitlines()) > 8)


def room(path: Path) -> str:
    return path.parent.relative_to(PACKAGE).as_posix() or "."


def test_the_modules_are_found() -> None:
    """Guards the discovery: an empty list would make every limit below hold."""
    names = {p.relative_to(PACKAGE).as_posix() for p in modules()}
    assert {"run/session.py", "agent/loop.py", "lsp/server.py"} <= names


def test_at_most_175_modules_and_15_a_folder() -> None:
    found = modules()
    assert len(found) <= MAX_MODULES, f"{len(found)} modules of more than 8 lines"
    crowded = {r: n for r, n in Counter(room(p) for p in found).items() if n > MAX_PER_FOLDER}
    assert not crowded, f"folders holding more than {MAX_PER_FOLDER} modules: {crowded}"


def test_no_file_name_is_shared_by_two_core_concepts() -> None:
    """Outside the front ends every module's file name is the package's only one of that name."""
    by_name: defaultdict[str, list[str]] = defaultdict(list)
    for path in modules():
        top = path.relative_to(PACKAGE).parts[0]
        if path.stem not in {"__init__", "__main__"} and top not in FRONT_ENDS:
            by_name[path.name].append(path.relative_to(PACKAGE).as_posix())
    shared = {name: where for name, where in by_name.items() if len(where) > 1}
    assert not shared, shared


def test_no_import_cycle() -> None:
    """No module reaches itself through the imports of others, at any length and in any form
    (the pair test above sees only cycles of two)."""
    graph = {name: _imports(name, path) for name, path in MODULES.items()}
    cycles = []
    for start, deps in graph.items():
        seen, todo = set(), list(deps)
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo.extend(graph[module])
        if start in seen:
            cycles.append(start)
    assert cycles == [], f"modules on an import cycle: {cycles}"


def _layer_names() -> set[str]:
    config = tomllib.loads((PACKAGE.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    names: set[str] = set()
    for contract in config["tool"]["importlinter"]["contracts"]:
        for layer in contract.get("layers", []):
            names.update(part.strip() for part in layer.split("|"))
    return names


CHAIN = re.compile(
    r"`?([\w.]+)`?(?:\s*\|\s*`?[\w.]+`?)*\s*>\s*`?([\w.]+)`?(?:\s*\|\s*`?[\w.]+`?)*\s*>\s*`?([\w.]+)`?"
)


def test_the_layer_order_is_stated_once() -> None:
    """Only pyproject.toml orders the layers; the architecture page and the rooms point at it."""
    layers = _layer_names()
    assert {"cli", "run", "config", "session", "core"} <= layers
    prose = [PACKAGE.parents[1] / "docs" / "architecture.md", *PACKAGE.rglob("README.md")]
    restated = []
    for path in prose:
        if path.is_relative_to(PACKAGE / "demo" / "workspace"):
            continue
        for match in CHAIN.finditer(path.read_text(encoding="utf-8")):
            if all(name in layers for name in match.groups()):
                restated.append(f"{path.relative_to(PACKAGE.parents[1])}: {match.group(0)}")
    assert not restated, restated
    assert "import-linter" in (PACKAGE.parents[1] / "docs" / "architecture.md").read_text(
        encoding="utf-8"
    )


def test_the_language_servers_features_load_no_pydantic() -> None:
    """A fold can pull a pydantic model into what the idle server imports (the ledger into the
    review port did); caught here in a second, not only by the editor's start-up test."""
    code = "import sys, cardrunner.lsp.app; print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
