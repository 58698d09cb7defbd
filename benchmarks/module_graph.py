"""The module graph of hypa's packages: who imports whom, cycles, lines per module.

    python benchmarks/module_graph.py                  # layers, upward imports, edges, cycles, lines
    python benchmarks/module_graph.py --before DIR     # lines per module beside another tree
    python benchmarks/module_graph.py --private        # imports of private names across modules
    python benchmarks/module_graph.py --small          # CI: the summary; exit 1 on a cycle, an upward or a private import

Every import counts, also one inside a function (a lazy import is still a dependency: it
only moves the cycle to run time).  ``tests/unit/test_module_graph.py`` keeps the graph
acyclic and private names private; the closing notes quote this script's output.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from collections import defaultdict

#: the packages of the project, bottom layer first
PACKAGES = ("ptxdialect", "passes", "runtime", "cudart", "tools")
#: the layers, bottom first: a module may import its own layer and the layers below it, never
#: one above (docs/design.md, "Layers").  ``runtime.abi`` is the contract between generated
#: code and everything that reads its memory, so it sits under the runtime's sub-packages.
LAYERS = ("ptxdialect", "passes", "runtime.abi", "runtime.metrics", "runtime.emulator",
          "runtime.models", "runtime.report", "runtime", "cudart", "tools")


def layer_of(mod: str) -> str:
    """The layer a module belongs to: the longest entry of ``LAYERS`` that prefixes it."""
    best = ""
    for layer in LAYERS:
        if (mod == layer or mod.startswith(layer + ".")) and len(layer) > len(best):
            best = layer
    return best


def upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports of a module in a higher layer (the package ``__init__`` of a layer above
    included): every one is a layering violation."""
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    out = []
    for mod, deps in edges.items():
        for d in deps:
            if rank.get(layer_of(d), -1) > rank.get(layer_of(mod), -1):
                out.append((mod, d))
    return sorted(out)


def modules(root: str) -> dict[str, str]:
    """Dotted module name (without the ``hypa.`` prefix) -> file path."""
    out = {}
    for pkg in PACKAGES:
        for dirpath, dirnames, files in os.walk(os.path.join(root, pkg)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
            for f in sorted(files):
                if f.endswith(".py"):
                    rel = os.path.relpath(os.path.join(dirpath, f), root)[:-3].replace(os.sep, ".")
                    out[rel.removesuffix(".__init__")] = os.path.join(dirpath, f)
    return out


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        name = node.module or ""
        return name.removeprefix("hypa.") if name.startswith("hypa.") else ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(mods: dict[str, str]) -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """(edges, private): the project modules each module imports, and every
    ``from X import _name`` / ``X._name`` of another project module."""
    edges: dict[str, set[str]] = defaultdict(set)
    private: list[tuple[str, str, str]] = []
    for mod, path in mods.items():
        is_pkg = path.endswith("__init__.py")
        tree = ast.parse(open(path, encoding="utf-8").read(), path)
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("hypa."):
                        target = a.name.removeprefix("hypa.")
                        if target in mods:
                            edges[mod].add(target)
                            aliases[a.asname or target] = target
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(mod, is_pkg, node)
                if not target:
                    continue
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    if sub in mods:  # "from . import isa"
                        edges[mod].add(sub)
                        aliases[a.asname or a.name] = sub
                    elif target in mods:
                        edges[mod].add(target)
                        if a.name.startswith("_") and not a.name.startswith("__"):
                            private.append((mod, target, a.name))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__") and aliases[node.value.id] != mod):
                private.append((mod, aliases[node.value.id], node.attr))
        edges[mod].discard(mod)
    return edges, sorted(set(private))


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def lines(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--before", help="another checkout: lines per module beside this one")
    ap.add_argument("--private", action="store_true", help="list imports of private names")
    ap.add_argument("--small", action="store_true",
                    help="CI: print the summary, cycles and private imports only; exit 1 on any of them")
    a = ap.parse_args(argv)
    mods = modules(a.root)
    edges, private = imports(mods)
    cyc = cycles(edges)
    up = upward(edges)
    print(f"{len(mods)} modules, {sum(len(v) for v in edges.values())} import edges, "
          f"{len(cyc)} cycles, {len(up)} upward imports, {len(private)} private names imported across modules")
    for c in cyc:
        print("  cycle:", " <-> ".join(c))
    for mod, d in up:
        print(f"  upward: {mod} ({layer_of(mod)}) imports {d} ({layer_of(d)})")
    print("\nlayers, bottom first: lines, modules, the layers each imports")
    for layer in LAYERS:
        members = [m for m in mods if layer_of(m) == layer]
        below = sorted({layer_of(d) for m in members for d in edges.get(m, ())} - {layer},
                       key=LAYERS.index)
        print(f"  {layer:18s} {sum(lines(mods[m]) for m in members):6d} lines {len(members):3d} modules"
              f"  -> {', '.join(below) if below else '-'}")
    if a.private or a.small:
        for mod, target, name in private:
            print(f"  {mod} uses {target}.{name}")
    if a.small:
        if len(mods) < len(PACKAGES):
            print(f"FAIL: {len(mods)} modules under {a.root}: not a checkout of hypa")
            return 1
        return 1 if cyc or private or up else 0
    print("\nmodule -> project modules it imports")
    for m in sorted(mods):
        deps = sorted(edges.get(m, ()))
        print(f"  {m}: {', '.join(deps) if deps else '-'}")
    before = modules(a.before) if a.before else {}
    print("\nlines per module" + (" (before -> after)" if before else ""))
    total_b = total_a = 0
    for m in sorted(set(mods) | set(before)):
        na = lines(mods[m]) if m in mods else 0
        nb = lines(before[m]) if m in before else 0
        total_a += na
        total_b += nb
        print(f"  {m:40s} {nb:6d} -> {na:6d}" if before else f"  {m:40s} {na:6d}")
    print(f"  {'total':40s} {total_b:6d} -> {total_a:6d}" if before else f"  {'total':40s} {total_a:6d}")
    return 1 if cyc or up else 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except BrokenPipeError:  # `... | head`
        sys.stdout = open(os.devnull, "w")
