# shellcheck shell=bash
# Shared by peers/venv.sh and ci/torch2-venv.sh (sourced, not run): a virtual environment over
# Debian's Python (--system-site-packages), kept outside the clone and reused as it is while its
# requirements file's sha256 equals the one stamped in VENV/.distmetrics-requirements.sha256.
# Each script keeps what differs: its pip command and the check of what the venv imports.
#   pinned_venv_init NAME REQS VENV   sets venv, reqs, want, stamp, base_python
#   pinned_venv_ready                 the venv exists and was made from these requirements
#   pinned_venv_path                  --path: print the venv's python and exit 0, or exit 1 saying why
#   pinned_venv_fresh                 an empty venv in place of whatever was there
#   pinned_venv_stamp                 marks the venv as made from these requirements (after the checks)

pinned_venv_init() {
  pinned_venv_name=$1 reqs=$2 venv=$3
  stamp=$venv/.distmetrics-requirements.sha256
  want=$(sha256sum "$reqs" | cut -d' ' -f1)
  base_python=${DISTMETRICS_BASE_PYTHON:-/usr/bin/python3}
}

pinned_venv_ready() {
  [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]
}

pinned_venv_path() {
  pinned_venv_ready && { echo "$venv/bin/python"; exit 0; }
  echo "$pinned_venv_name: no venv for $reqs at $venv (run bash $pinned_venv_name)" >&2
  exit 1
}

pinned_venv_fresh() {
  echo "$pinned_venv_name: making $venv from $reqs"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$base_python" -m venv --system-site-packages "$venv"
}

pinned_venv_stamp() { echo "$want" >"$stamp"; }
