#!/usr/bin/env bash
# Create .venv (once) with what every documented command needs: the package (editable), Dask for `sweep`,
# matplotlib for `report`, and the compiled core. ./mpathlab runs in .venv from then on. Installs nothing
# outside .venv and needs no root (scripts/test.sh adds the test dependencies, some of them with apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
so=$(ls src/mpathlab/_fastcore*.so 2>/dev/null | head -n 1 || true)
if ! .venv/bin/python -c "import dask.distributed, matplotlib" 2>/dev/null; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[sweep,report]"
elif [ -z "$so" ] || [ src/mpathlab/_fastcore.c -nt "$so" ] || [ src/mpathlab/_fastcore_boundary.h -nt "$so" ]; then
  .venv/bin/python setup.py -q build_ext --inplace   # the dependencies are there; only the core is missing
fi
