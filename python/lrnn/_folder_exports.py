"""One file per layer: a package whose every module file is imported and whose names are
exported, so that adding a layer is adding its file (docs/architecture.md "How to add")."""

import importlib
import pkgutil
from typing import Dict, Iterable, List


def export_module_files(package: str, path: Iterable[str], namespace: Dict[str, object],
                        skip: Iterable[str] = ()) -> List[str]:
    """Imports every module of `package` (its folders `path`) whose name does not start with
    `_` and is not in `skip`, in name order, and puts each one's `__all__` into `namespace`
    (the package's globals()). Returns the exported names in that order."""
    exported: List[str] = []
    skipped = set(skip)
    for info in sorted(pkgutil.iter_modules(path), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in skipped:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for name in module.__all__:
            namespace[name] = getattr(module, name)
            exported.append(name)
    return exported
