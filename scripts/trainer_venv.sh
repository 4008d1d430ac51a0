#!/usr/bin/env bash
# The virtualenv a trainer's live tests run in: made on first use under ~/.cache/referee/trainers/
# and remade when its pinned requirements change. Prints the venv's python.
#
# Usage: scripts/trainer_venv.sh NAME      (NAME: a folder python/live/NAME/)
#
# python/live/NAME/requirements.txt          pinned requirements, installed with their dependencies
# python/live/NAME/requirements-nodeps.txt   optional: installed after, with --no-deps (trainers
#                                            whose full dependency set needs a GPU build)
# A requirements.txt whose first line is `# base: torch` is installed on top of one shared venv
# holding torch (python/live/torch.txt): torch with its CUDA wheels is about 3 GB, so it is
# installed once, and each trainer's venv sees it through a .pth file.
#
# REFEREE_CACHE_DIR moves ~/.cache/referee. Concurrent runs for one venv wait on a lock.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/trainer_venv.sh NAME}
dir=python/live/$name
[ -f "$dir/requirements.txt" ] || { echo "no $dir/requirements.txt" >&2; exit 2; }
cache=${REFEREE_CACHE_DIR:-$HOME/.cache/referee}/trainers
mkdir -p "$cache"
PYTHON=${PYTHON:-python3}

# The stamp names what a venv was made from: its files, and its base's stamp.
stamp_of() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }

# make VENV STAMP REQ [NODEPS] [BASE_SITE]
make_venv() {
    local venv=$1 stamp=$2 req=$3 nodeps=${4:-} base=${5:-}
    exec 9>"$venv.lock"
    flock 9
    if [ -f "$venv/.stamp" ] && [ "$(cat "$venv/.stamp")" = "$stamp" ]; then
        return 0
    fi
    echo "== trainer venv $venv (from $req; a few minutes, once)" >&2
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv" >&2
    local site
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    [ -z "$base" ] || echo "$base" >"$site/_referee_base.pth"
    "$venv/bin/pip" install -q --disable-pip-version-check --upgrade "pip==24.3.1" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$req" >&2
    [ -z "$nodeps" ] || "$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$nodeps" >&2
    echo "$stamp" >"$venv/.stamp"
    flock -u 9
}

base_site=
if head -1 "$dir/requirements.txt" | grep -q '^# base: torch'; then
    tvenv=$cache/torch
    make_venv "$tvenv" "$(stamp_of python/live/torch.txt)" python/live/torch.txt
    base_site=$("$tvenv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
fi
venv=$cache/$name
nodeps=
[ ! -f "$dir/requirements-nodeps.txt" ] || nodeps=$dir/requirements-nodeps.txt
stamp=$(stamp_of "$dir/requirements.txt" $nodeps ${base_site:+"$tvenv/.stamp"})
make_venv "$venv" "$stamp" "$dir/requirements.txt" "$nodeps" "$base_site"
echo "$venv/bin/python"
