# Source this: make (once) and activate the virtual environment in $VENV (default .venv) with
# everything the book and its tests need. Re-installs only when a requirements file changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
stamp="$VENV/.requirements.sha"
want="$(cat "$ROOT/requirements.txt" "$ROOT/requirements-test.txt" "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  (cd "$ROOT" && "$VENV/bin/python" -m pip install --quiet -r requirements-test.txt)
  echo "$want" > "$stamp"
fi
export PATH="$VENV/bin:$PATH"
cd "$ROOT"
