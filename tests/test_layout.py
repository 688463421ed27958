"""The import graph the layout promises, read from the source with `ast`:

- `service/store/` imports nothing of the service but `service.domain`;
- `service/domain/` imports neither Litestar nor `service.store` (nor the HTTP layer);
- `service/workers/` and `service/schemas/` do not import the HTTP layer (`service.api`);
- `service/schemas/` are plain data: they get no `Context` (so no store, files or signing
  key): views are made from what the domain read;
- among the product's packages, only `engine/video/` imports PyAV;
- the leaves (the error hierarchy, the outbound-address rule) import nothing of ours, and
  `service/responders/` takes nothing else from the domain, so the domain (which asks the
  responders for replies) and the responders never import each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    """Absolute module names `path` imports (relative imports are not used in this project)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@pytest.mark.parametrize("path", _modules("service/store"), ids=str)
def test_store_depends_only_on_the_domain(path):
    service_imports = {n for n in _imports(path) if _within(n, "service")}
    allowed = {
        n for n in service_imports if _within(n, "service.domain") or _within(n, "service.store")
    }
    assert service_imports == allowed, service_imports - allowed


@pytest.mark.parametrize("path", _modules("service/domain"), ids=str)
def test_domain_knows_no_http_and_no_storage(path):
    for name in _imports(path):
        for package in ("litestar", "granian", "service.store", "service.api", "sqlite3"):
            assert not _within(name, package), f"{path.name} imports {name}"


@pytest.mark.parametrize("path", _modules("engine") + _modules("service"), ids=str)
def test_only_the_video_layer_imports_pyav(path):
    if (ROOT / "engine" / "video") in path.parents:
        return
    assert not any(_within(name, "av") for name in _imports(path)), path


@pytest.mark.parametrize("path", _modules("service/workers") + _modules("service/schemas"), ids=str)
def test_workers_and_schemas_do_not_reach_into_the_http_layer(path):
    assert not any(_within(name, "service.api") for name in _imports(path)), path


LEAVES = ("service/outbound.py", "service/domain/errors.py")


@pytest.mark.parametrize("path", LEAVES)
def test_leaves_import_nothing_of_ours(path):
    ours = {n for n in _imports(ROOT / path) if _within(n, "service") or _within(n, "engine")}
    assert not ours, ours


@pytest.mark.parametrize("path", _modules("service/responders"), ids=str)
def test_responders_take_only_the_error_hierarchy_from_the_domain(path):
    domain = {n for n in _imports(path) if _within(n, "service.domain")}
    assert domain <= {"service.domain.errors"}, domain


@pytest.mark.parametrize("path", _modules("service/schemas"), ids=str)
def test_schemas_read_nothing(path):
    assert "service.domain.context" not in _imports(path), path
