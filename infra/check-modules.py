#!/usr/bin/env python3
"""Fails on an import loop between the modules of a crate.

For every pair of sibling modules (children of the same parent), an arrow
a -> b means some file under a names something under b (`use crate::...`,
`crate::x::y` in code, `super::sibling`). Arrows between siblings must form
no cycle; a child using its parent, or a parent its child, is not an arrow.
Comments and doc links do not count.

Usage: check-modules.py CRATE_SRC_DIR...
"""
import re
import sys
from pathlib import Path


def module_of(src: Path, file: Path) -> tuple:
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def code_lines(text: str):
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("//"):
            continue
        yield line.split("//")[0] if "://" not in line else line


def referenced(module: tuple, text: str, modules: set) -> set:
    """The modules this file's code names."""
    found = set()
    code = "\n".join(code_lines(text))
    # `use crate::a::{b, c::d}` and paths `crate::a::b` anywhere in code.
    for m in re.finditer(r"\bcrate((?:::[a-z_][a-z0-9_]*)+)", code):
        found.add(tuple(m.group(1).strip(":").split("::")))
    for m in re.finditer(r"\bcrate::\{([^}]*)\}", code):
        for item in m.group(1).split(","):
            found.add(tuple(item.strip().split("::")[0:1]))
    # `super::x` from a file: x is a sibling (or an item of the parent).
    parent = module[:-1]
    for m in re.finditer(r"\bsuper((?:::[a-z_][a-z0-9_]*)+)", code):
        found.add(parent + tuple(m.group(1).strip(":").split("::")))
    for m in re.finditer(r"\buse super::\{([^}]*)\}", code):
        for item in m.group(1).split(","):
            found.add(parent + tuple(item.strip().split("::")[0:1]))
    out = set()
    for path in found:
        # The longest prefix that is a module.
        for n in range(len(path), 0, -1):
            if path[:n] in modules:
                out.add(path[:n])
                break
    return out


def check(src: Path) -> list:
    files = [f for f in src.rglob("*.rs")]
    modules = {module_of(src, f) for f in files}
    edges = set()
    for f in files:
        here = module_of(src, f)
        # A test module inside a file may use anything of its parent.
        text = f.read_text()
        text = text.split("#[cfg(test)]")[0]
        for there in referenced(here, text, modules):
            n = 0
            while n < min(len(here), len(there)) and here[n] == there[n]:
                n += 1
            if n == len(here) or n == len(there):
                continue  # ancestor or descendant
            edges.add((here[: n + 1], there[: n + 1]))
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    loops = []
    state = {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                loops.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return loops


def main() -> int:
    bad = 0
    for arg in sys.argv[1:]:
        src = Path(arg)
        for loop in check(src):
            print(f"{src}: module import loop: " + " -> ".join("::".join(m) for m in loop), file=sys.stderr)
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
