"""The lowering package's structure: one documented module per concept, imports that only go
down the order the package's docstring gives (no cycles), no private names borrowed from
other modules, and every module counted in the compile cache's key."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import hypa.runtime.emulator.lowering as lowering
from hypa.runtime.emulator import jit

PACKAGE = Path(lowering.__file__).parent
PREFIX = "hypa.runtime.emulator.lowering"

#: the order of ``runtime/emulator/lowering/__init__.py``'s docstring: a module imports only earlier ones
ORDER = ["types", "rules", "irbuild", "softfloat", "tensor_core", "function", "outline", "initcheck", "racecheck", "addressing", "hoisted", "emitter", "semantics",
         "memory_metrics", "printf", "calls", "heap", "warp", "scheduler"]


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        out[".".join([PREFIX, *parts])] = path
    return out


def _imports(name: str, path: Path) -> list[tuple[str, list[str]]]:
    """(module imported, names imported from it) for every import in the file, function
    bodies included, relative imports resolved."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((a.name, []) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = [a.name for a in node.names]
            if mod.startswith(PREFIX):
                # ``from . import semantics``: the names may be modules themselves
                out.extend((f"{mod}.{n}", []) for n in names if f"{mod}.{n}" in _modules())
            out.append((mod, names))
    return out


def _layer(module: str) -> int:
    rest = module[len(PREFIX) + 1:].split(".")[0]
    return ORDER.index(rest)


def test_every_module_has_a_docstring() -> None:
    for name, path in _modules().items():
        assert ast.get_docstring(ast.parse(path.read_text())), f"{name} says nowhere why it exists"


def test_modules_import_only_modules_above_them() -> None:
    mods = _modules()
    for name, path in mods.items():
        if name == PREFIX:
            continue  # the package's entry points import lazily from the whole package
        for target, _names in _imports(name, path):
            if target not in mods or target == PREFIX or target == name:
                continue
            if target.startswith(name + "."):
                continue  # a package importing its own modules (semantics/__init__.py)
            same = _layer(target) == _layer(name)
            assert _layer(target) < _layer(name) or (same and target.split(".")[4] == "semantics"), \
                f"{name} imports {target}, which is not above it"


def test_no_private_names_from_other_modules() -> None:
    for name, path in _modules().items():
        for target, names in _imports(name, path):
            if target.startswith("hypa") and target != name:
                private = [n for n in names if n.startswith("_") and not n.startswith("__")]
                assert not private, f"{name} imports private {private} from {target}"


def test_rule_modules_import_no_sibling_cycle() -> None:
    mods = {n: p for n, p in _modules().items() if n.startswith(f"{PREFIX}.semantics.")}
    graph = {n: {t for t, _ in _imports(n, p) if t in mods and t != n} for n, p in mods.items()}
    done: set[str] = set()

    def visit(n: str, stack: tuple[str, ...]) -> None:
        assert n not in stack, f"import cycle: {' -> '.join(stack + (n,))}"
        if n in done:
            return
        for t in graph[n]:
            visit(t, stack + (n,))
        done.add(n)

    for n in graph:
        visit(n, ())


def test_cache_key_covers_every_lowering_module() -> None:
    sources = {os.path.realpath(p) for p in jit.source_files()}
    missing = [str(p) for p in _modules().values() if os.path.realpath(p) not in sources]
    assert not missing, f"editing these would not invalidate compiled code: {missing}"


def test_every_rule_is_registered_under_an_isa_entry() -> None:
    from hypa.ptxdialect import isa

    entries = {i.name for i in isa.INSTRUCTIONS}
    unknown = lowering.supported_entries() - entries
    assert not unknown, f"rules registered under names that are no ISA entry: {sorted(unknown)}"
