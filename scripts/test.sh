#!/usr/bin/env bash
# Set up .venv with the test dependencies (once) and run the test suite. Run as root, test-deps.sh also
# apt-get installs fio, shellcheck, linux-source-6.1, python3-six and chromium (not root: their tests skip).
# Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# (Re)install when a dependency is missing or the compiled core is older than its source.
so=$(ls src/mpathlab/_fastcore*.so 2>/dev/null | head -n 1 || true)
if ! .venv/bin/python -c "import pytest, hypothesis, mpathlab, fio_plot, re2, importlinter" 2>/dev/null \
   || [ -z "$so" ] || [ src/mpathlab/_fastcore.c -nt "$so" ] || [ src/mpathlab/_fastcore_boundary.h -nt "$so" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
fi
bash scripts/test-deps.sh
# the layer contracts of pyproject.toml (docs/architecture.md): an upward import or a cycle stops here
.venv/bin/lint-imports --no-cache
exec .venv/bin/python -m pytest "$@"
