#!/usr/bin/env bash
# Makes (or reuses) the virtual environment with the real metric libraries of
# peers/requirements-torch1.13.txt, over Debian's Python and torch 1.13:
#   /usr/bin/python3 -m venv --system-site-packages VENV; VENV/bin/pip install --no-deps -r REQS
# It lives outside the clone, in $DISTMETRICS_PEERS_VENV (default
# ${XDG_CACHE_HOME:-~/.cache}/distmetrics/peers-torch1.13), and is reused as it is while the
# requirements file's sha256 equals the one in VENV/.distmetrics-requirements.sha256: a machine
# that ran before installs nothing. --no-deps: pip never pulls another torch; afterwards the venv
# must import Debian's torch 1.13 or this fails.
#   peers/venv.sh            make or reuse; the last line printed is the venv's python
#   peers/venv.sh --path     print the venv's python if it is ready (exit 1 if not), install nothing
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../ci/pinned_venv.sh"
pinned_venv_init peers/venv.sh "$here/requirements-torch1.13.txt" \
  "${DISTMETRICS_PEERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/distmetrics/peers-torch1.13}"
[ "${1:-}" = --path ] && pinned_venv_path

if pinned_venv_ready; then
  echo "peers/venv.sh: $venv is up to date with $(basename "$reqs") (sha256 ${want:0:12}): nothing installed"
else
  pinned_venv_fresh
  # A bounded install: pip's own timeout per connection, and one backstop for the whole.
  timeout 600 "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --timeout 60 \
    --no-deps -r "$reqs"
  # The torch it sees must be the base's (Debian's 1.13), and every import the peers need must work.
  "$venv/bin/python" - "$base_python" <<'PY'
import subprocess, sys
import torch
base = subprocess.run([sys.argv[1], "-c", "import torch; print(torch.__file__)"], capture_output=True,
                      text=True, check=True).stdout.strip()
if torch.__file__ != base or not torch.__version__.startswith("1.13"):
    sys.exit(f"peers/venv.sh: the venv imports torch {torch.__version__} from {torch.__file__}, "
             f"not the base's torch 1.13 from {base}")
import torchmetrics, ignite, torcheval, lightning_utilities  # noqa: F401
import torcheval.metrics.toolkit  # noqa: F401
print(f"peers/venv.sh: torch {torch.__version__} ({torch.__file__}), torchmetrics {torchmetrics.__version__}, "
      f"pytorch-ignite {ignite.__version__}, torcheval {torcheval.__version__}")
PY
  pinned_venv_stamp
fi
echo "$venv/bin/python"
