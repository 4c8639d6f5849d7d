#!/usr/bin/env bash
# Makes (or reuses) the virtual environment with PyTorch 2.x from PyPI of
# ci/requirements-torch2.txt (issue 23), over Debian's /usr/bin/python3 and its site-packages
# (pytest, scikit-learn for the tests), with the pip torch in front: afterwards the venv must
# import that torch, not Debian's 1.13, or this fails. It lives outside the clone, in
# $DISTMETRICS_TORCH2_VENV (default ${XDG_CACHE_HOME:-~/.cache}/distmetrics/torch2-<torch version>),
# and is reused as it is while the requirements file's sha256 equals the one in
# VENV/.distmetrics-requirements.sha256: a machine that ran before downloads nothing. pip's own
# cache keeps the wheels (several GB) for a remade venv.
#   ci/torch2-venv.sh            make or reuse; the last line printed is the venv's python
#   ci/torch2-venv.sh --path     print the venv's python if it is ready (exit 1 if not), install nothing
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
torch_version=$(sed -n 's/^torch==\([0-9.]*\)$/\1/p' "$here/requirements-torch2.txt")
[ -n "$torch_version" ] || { echo "ci/torch2-venv.sh: no line torch==X.Y.Z in $here/requirements-torch2.txt" >&2; exit 2; }
. "$here/pinned_venv.sh"
pinned_venv_init ci/torch2-venv.sh "$here/requirements-torch2.txt" \
  "${DISTMETRICS_TORCH2_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/distmetrics/torch2-$torch_version}"
[ "${1:-}" = --path ] && pinned_venv_path

if pinned_venv_ready; then
  echo "ci/torch2-venv.sh: $venv is up to date with $(basename "$reqs") (sha256 ${want:0:12}): nothing installed"
else
  pinned_venv_fresh
  # Bounded: pip's timeout per connection, and one backstop for the whole (a cold download is
  # several GB). nice: the build machines are shared. --use-pep517: a source distribution (pesq)
  # builds in an isolated environment of its own build requirements, not in the venv's (whose
  # numpy.distutils does not run on the setuptools torch needs).
  timeout "${DISTMETRICS_TORCH2_INSTALL_TIMEOUT:-2400}" nice -n 15 "$venv/bin/python" -m pip install \
    --disable-pip-version-check --no-input --timeout 60 --use-pep517 -r "$reqs"
  "$venv/bin/python" - "$torch_version" <<'PY'
import sys
import torch, torch.distributed as dist, pybind11, numpy  # noqa: F401
import torchmetrics, ignite, torcheval  # noqa: F401  (the current peers)
import torchvision, pycocotools, pystoi, torchaudio, gammatone, vmaf_torch, einops  # noqa: F401  (issue 35)
import transformers, torch_linear_assignment, pesq  # noqa: F401  (issue 44)
import os
if torch.__version__.split("+")[0] != sys.argv[1] or not torch.__file__.startswith(os.path.realpath(sys.prefix)):
    sys.exit(f"ci/torch2-venv.sh: the venv imports torch {torch.__version__} from {torch.__file__}, not {sys.argv[1]}")
print(f"ci/torch2-venv.sh: torch {torch.__version__} (CUDA {torch.version.cuda}, gloo {dist.is_gloo_available()}, "
      f"nccl {dist.is_nccl_available()}) from {torch.__file__}; pybind11 {pybind11.__version__}, numpy {numpy.__version__}")
PY
  pinned_venv_stamp
fi
echo "$venv/bin/python"
