#!/usr/bin/env bash
# Set up a virtualenv with the test dependencies (once) and run the test suite.
# Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import pytest, hypothesis, mpathlab" 2>/dev/null; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
fi
exec .venv/bin/python -m pytest "$@"
