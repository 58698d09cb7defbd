# lit configuration for hypa's FileCheck tests (tests/filecheck), laid out as
# MLIR's: Dialect/ptx, Frontend, Transforms, Conversion, Execution.
import os
import shutil

import lit.formats

config.name = "hypa"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ptx", ".mlir", ".toml", ".test"]
# Tests live under tests/filecheck; run them with `lit tests/filecheck`.
config.excludes = [
    "Inputs", "lit.cfg.py", "README.md", "examples", "kernels", "benchmarks", "unit",
    ".venv", "build", "ptxdialect", "passes", "runtime", "tools",
]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))

config.environment["PATH"] = os.environ.get("PATH", "")
for var in ("PYTHONPATH", "HOME", "TMPDIR", "HYPA_CACHE_DIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

root = os.path.dirname(__file__)
config.substitutions.append(("%examples", os.path.join(root, "examples")))
config.substitutions.append(("%kernels", os.path.join(root, "tests", "kernels")))

if shutil.which("ptxas"):
    config.available_features.add("ptxas")
if shutil.which("nvcc"):
    config.available_features.add("nvcc")
