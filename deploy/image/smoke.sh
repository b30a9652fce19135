#!/usr/bin/env bash
# The image, run: its entrypoint as its own (non-root) user, against this machine's Postgres and
# Redis, the way docker-compose.yml runs it. `migrate`, then `start` answering a web message, then
# `worker` running a compaction pass the bot queued, then SIGTERM to each, which must stop in order
# (`*.stopping`, then `*.stopped`, exit 0). Prints the image's size and how long each took to start.
# Exits non-zero at the first thing that does not happen; the logs are printed then.
#
#   deploy/image/smoke.sh [IMAGE]        default: localhost/ebb:<version of package.json>
#
# buildah runs each process with `--isolation chroot` and the host's network, so no Docker engine,
# runc or cgroups are needed. Needs root, buildah, curl, createdb/dropdb (the Postgres client) and
# redis-cli; PGHOST/PGUSER (default 127.0.0.1/postgres, trust auth) and REDIS_URL say where.
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/image/common.sh
need buildah curl createdb dropdb redis-cli node
image=${1:-$EBB_IMAGE}
image_exists "$image" || { echo "smoke: no image $image (npm run image builds it)" >&2; exit 1; }

export PGHOST=${PGHOST:-127.0.0.1} PGUSER=${PGUSER:-postgres}
redis_url=${REDIS_URL:-redis://127.0.0.1:6379}
database=ebb_image_smoke_$$
prefix=ebb-image-smoke-$$
free_port() { node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'; }
port=$(free_port)
metrics_port=$(free_port)

# What the image says it runs, and as whom: the smoke runs exactly that, never as root.
inspected=$(bh inspect --type image "$image")
field() {
  node -e 'const c = JSON.parse(process.argv[1]).OCIv1.config ?? {}; const v = c[process.argv[2]];
    console.log(Array.isArray(v) ? v.join("\n") : (v ?? ""))' "$inspected" "$1"
}
user=$(field User)
mapfile -t entrypoint < <(field Entrypoint)
if [[ -z $user || $user == root || $user == 0 || $user == 0:* ]]; then
  echo "smoke: the image runs as '${user:-root}', not as a user of its own" >&2
  exit 1
fi
((${#entrypoint[@]})) || { echo "smoke: the image has no ENTRYPOINT" >&2; exit 1; }

work=$(mktemp -d)
chmod 0755 "$work"
descendants() { local child; for child in $(pgrep -P "$1"); do echo "$child"; descendants "$child"; done; }
container=
pids=()
cleanup() {
  local status=$? pid child
  # What is still running: the processes in the image first (killing buildah would orphan them).
  for pid in "${pids[@]}"; do
    for child in $(descendants "$pid"); do kill -KILL "$child" 2>/dev/null || true; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if ((status != 0)); then
    for log in "$work"/*.log; do [[ -f $log ]] && { echo "--- ${log##*/}"; cut -c1-400 "$log"; }; done >&2
    echo "smoke: FAILED" >&2
  fi
  [[ -n $container ]] && bh rm "$container" >/dev/null 2>&1
  dropdb --if-exists "$database" 2>/dev/null || true
  redis-cli -u "$redis_url" --scan --pattern "$prefix:*" | xargs -r redis-cli -u "$redis_url" del >/dev/null || true
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
fail() { echo "smoke: $*" >&2; exit 1; }

# A web channel on loopback (so no EBB_ADMIN_TOKEN), answering everything, and a context the worker
# must compact after a few turns: a pass is queued once a prompt holds working_tokens.
cat >"$work/config.toml" <<EOF
[web]
host = "127.0.0.1"
port = $port

[web.bot]
respond_to = "all"

[compaction]
working_tokens = 1000
protect_recent = 2
cooldown_seconds = 0

[memory]
recall_max_tokens = 50
EOF
chmod 0644 "$work/config.toml"

createdb "$database"
container=$(bh from --pull=never "$image")

# One process of the image: its entrypoint with ARGS, as its user, on the host's network, with the
# smoke's config mounted read-only. In the background, buildah itself (not bh, whose subshell would
# be what $! names), so the launcher's PID is buildah's.
launch() {
  local name=$1
  shift
  buildah --storage-driver "$EBB_IMAGE_STORAGE_DRIVER" run --isolation chroot --network host --user "$user" --volume "$work/config.toml:/smoke/config.toml:ro" \
    --env DATABASE_URL="postgres://$PGUSER@$PGHOST:5432/$database" --env REDIS_URL="$redis_url" \
    --env EBB_REDIS_PREFIX="$prefix" --env EBB_CONFIG=/smoke/config.toml \
    --env EBB_METRICS_PORT="$metrics_port" \
    "$container" -- "${entrypoint[@]}" "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
}

# The process the entrypoint started, below buildah's chroot runtime (buildah does not pass signals
# on; the chroot shares the host's PID namespace, so the host can signal it directly).
process_of() {
  local child
  for _ in $(seq 1 100); do
    for child in $(descendants "$1"); do
      [[ $(cat "/proc/$child/comm" 2>/dev/null) == "${entrypoint[0]##*/}" ]] && { echo "$child"; return; }
    done
    sleep 0.1
  done
  return 1
}

# Waits (up to $2 s) for a log line with "event":"$3" in $1.log.
wait_for() {
  local log=$work/$1.log deadline=$((SECONDS + $2))
  until grep -q "\"event\":\"$3\"" "$log" 2>/dev/null; do
    ((SECONDS < deadline)) || fail "no $3 in $1's log after $2 s"
    sleep 0.1
  done
}

# The pino time (epoch ms) of the first "event":"$2" line in $1.log.
event_ms() { grep -m1 "\"event\":\"$2\"" "$work/$1.log" | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).time))'; }

now_ms() { date +%s%3N; }

# SIGTERM to the process; it must log $2 then $3, in that order, and exit 0.
stop() {
  local name=$1 stopping=$2 stopped=$3 launcher=$4 pid uid
  pid=$(process_of "$launcher") || fail "no $name process under buildah"
  uid=$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")
  ((uid != 0)) || fail "$name runs as root"
  kill -TERM "$pid"
  wait_for "$name" 30 "$stopped"
  local status=0
  wait "$launcher" || status=$?
  ((status == 0)) || fail "$name exited $status after SIGTERM"
  grep -o '"event":"[a-z_.]*"' "$work/$name.log" | grep -n -x -e "\"event\":\"$stopping\"" -e "\"event\":\"$stopped\"" |
    cut -d: -f2- | tr -d '"' | sed 's/event://' | paste -sd' ' | grep -qx "$stopping $stopped" ||
    fail "$name did not log $stopping then $stopped"
  ! grep -E '"level":(50|60),' "$work/$name.log" >&2 || fail "$name logged an error"
  echo "smoke: $name (uid $uid) stopped on SIGTERM ($stopping, $stopped, exit 0)"
}

echo "smoke: $image as $user: ${entrypoint[*]} {migrate,start,worker}, Postgres $PGHOST/$database, Redis $redis_url ($prefix)"

# The cost of buildah run itself, to tell it from Ebb's start.
t0=$(now_ms)
bh run --isolation chroot --user "$user" "$container" -- "${entrypoint[0]}" -e 0
launch_ms=$(($(now_ms) - t0))

t0=$(now_ms)
bh run --isolation chroot --network host --user "$user" \
  --env DATABASE_URL="postgres://$PGUSER@$PGHOST:5432/$database" "$container" -- "${entrypoint[@]}" migrate \
  >"$work/migrate.log" 2>&1 || fail "migrate failed"
migrate_ms=$(($(now_ms) - t0))
grep -q 'migrations applied' "$work/migrate.log" || fail "migrate said nothing of migrations"
echo "smoke: migrate applied the migrations in $migrate_ms ms"

t0=$(now_ms)
launch bot start
bot=${pids[-1]}
wait_for bot 90 ebb.started
start_ms=$(($(event_ms bot ebb.started) - t0))
grep -q "\"url\":\"http://127.0.0.1:$port\"" "$work/bot.log" || fail "the bot is not on 127.0.0.1:$port"
echo "smoke: ebb start up (ebb.started) $start_ms ms after launch"

t0=$(now_ms)
launch worker worker
worker=${pids[-1]}
wait_for worker 90 worker.ready
worker_ms=$(($(event_ms worker worker.ready) - t0))
echo "smoke: ebb worker ready (worker.ready) $worker_ms ms after launch"

# Turns until the bot queues a pass (compaction.triggered) and the worker completes it.
for i in $(seq 1 20); do
  code=$(curl -s -o "$work/reply.json" -w '%{http_code}' "http://127.0.0.1:$port/api/channels/smoke/messages" \
    -H 'content-type: application/json' \
    -d "{\"author\":\"ana\",\"text\":\"message $i: the image runs migrate, the bot and a worker\",\"id\":\"m$i\"}")
  [[ $code == 200 ]] || fail "message $i: HTTP $code: $(cat "$work/reply.json")"
  grep -q '"reply":"' "$work/reply.json" || fail "message $i: no reply: $(cat "$work/reply.json")"
  ((i == 1)) && echo "smoke: a web message answered 200: $(cut -c1-120 "$work/reply.json")"
  grep -q '"event":"compaction.triggered"' "$work/bot.log" && break
done
wait_for bot 10 compaction.triggered
wait_for worker 60 compaction.completed
echo "smoke: the worker ran a pass: $(grep -m1 '"event":"compaction.completed"' "$work/worker.log" | cut -c1-200)"

stop bot ebb.stopping ebb.stopped "$bot"
stop worker worker.stopping worker.stopped "$worker"
pids=()

size=$(image_size "$image")
echo "smoke: passed. $image: $(human "$size") ($size bytes, uncompressed); ebb start up in $start_ms ms, ebb worker ready in $worker_ms ms (each including ~$launch_ms ms of buildah run)"
