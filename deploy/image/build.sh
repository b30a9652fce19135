#!/usr/bin/env bash
# `npm run image`: Ebb's Dockerfile built with buildah, no Docker engine, FROM the base base.sh makes
# (built first if missing), as localhost/ebb:<version of package.json>. Prints the image's size and
# how long the build took. The build's `npm ci` steps need the npm registry; nothing else is fetched.
#
#   deploy/image/build.sh        then deploy/image/smoke.sh runs it
#
# Needs root and buildah (Debian: apt-get install -y buildah debootstrap).
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/image/common.sh
need buildah node

bash deploy/image/base.sh

# A registry reached through a TLS-intercepting proxy (as on Ebb's CI machines) needs its CA, which
# is the host's business, not the image's: a directory with the host's CA bundle and an npmrc naming
# it is mounted over the base's empty /usr/local/etc (npm's global config) for the RUN steps. Over a
# directory the base has, so the mount leaves nothing in the layers (a mount on a path the base lacks
# leaves an empty file behind).
mounts=()
cafile=$(npm config get cafile 2>/dev/null || true)
[[ $cafile == null || $cafile == undefined ]] && cafile=
cafile=${cafile:-${NODE_EXTRA_CA_CERTS:-}}
if [[ -n $cafile && -f $cafile ]]; then
  etc=$(mktemp -d)
  trap 'rm -rf "$etc"' EXIT
  cp "$cafile" "$etc/build-ca.crt"
  printf 'cafile=/usr/local/etc/build-ca.crt\nupdate-notifier=false\n' >"$etc/npmrc"
  chmod -R a+rX "$etc"
  mounts+=(--volume "$etc:/usr/local/etc:ro")
fi

echo "image: building $EBB_IMAGE FROM $EBB_BASE_IMAGE (storage: $EBB_IMAGE_STORAGE_DRIVER)"
started=$(date +%s)
# --layers keeps each step's result, so a build with unchanged manifests skips both `npm ci` runs.
bh bud --isolation chroot --layers --pull=never \
  --build-arg "BASE=$EBB_BASE_IMAGE" "${mounts[@]}" \
  --tag "$EBB_IMAGE" --file Dockerfile .
took=$(($(date +%s) - started))

size=$(image_size "$EBB_IMAGE")
echo "image: $EBB_IMAGE, $(human "$size") ($size bytes, uncompressed), built in $took s"
