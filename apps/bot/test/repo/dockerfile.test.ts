/**
 * The image and docker-compose.yml, read as text. The dependency stage copies only manifests (so its
 * layer is cached until a dependency changes), and `npm ci` there needs every workspace's
 * package.json: a new package must be listed. The runtime gives `node` the data directory, and
 * compose gives the admin token to the bot alone, without making it a compose error.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadEnv } from '@ebb/config';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));

it('copies the manifest of every workspace into the dependency stage', () => {
  const { workspaces } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    workspaces: string[];
  };
  const manifests = workspaces.flatMap((pattern) => {
    if (!pattern.endsWith('/*')) return [`${pattern}/package.json`];
    const dir = pattern.slice(0, -2);
    return readdirSync(join(ROOT, dir), { withFileTypes: true })
      .filter(
        (entry) => entry.isDirectory() && readdirSync(join(ROOT, dir, entry.name)).includes('package.json'),
      )
      .map((entry) => `${dir}/${entry.name}/package.json`);
  });
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const copied = [...dockerfile.matchAll(/^COPY (\S+\/package\.json) /gm)].map((m) => m[1]);
  expect(manifests.length).toBeGreaterThan(10);
  expect([...copied].sort()).toEqual([...manifests].sort());
});

// The README has operators keep EBB_ADMIN_TOKEN and the API keys in .env beside docker-compose.yml:
// the build stage copies the whole context (COPY . .) and keeps what its tar does not exclude, so a
// .env in the context would be in the image's layers.
it('keeps .env files out of the image and out of git', () => {
  const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n');
  for (const pattern of ['.env', '.env.*', '**/.env', '**/.env.*']) expect(ignored).toContain(pattern);
  for (const path of ['.env', '.env.production', 'deploy/.env']) {
    const checked = spawnSync('git', ['check-ignore', '--no-index', '-q', path], { cwd: ROOT });
    expect({ path, ignored: checked.status === 0 }).toEqual({ path, ignored: true });
  }
});

/** The runtime stage: what follows the Dockerfile's last FROM. */
function runtimeStage(): string {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  return dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
}

/** docker-compose.yml cut into its top-level blocks and services (no YAML parser in this package). */
function compose() {
  const text = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
  const blocks = new Map(
    [...text.matchAll(/^([\w-]+):.*\n((?:(?: .*)?\n)*)/gm)].map((m) => [m[1] ?? '', m[2] ?? '']),
  );
  const service = (name: string) => {
    const block = new RegExp(`^  ${name}:\\n((?:(?:    .*)?\\n)*)`, 'm').exec(blocks.get('services') ?? '');
    if (!block?.[1]) throw new Error(`docker-compose.yml has no service ${name}`);
    return block[1];
  };
  return { anchor: blocks.get('x-ebb') ?? '', volumes: blocks.get('volumes') ?? '', service };
}

// Every stage starts FROM the one base (ARG BASE) or from an earlier stage: `npm run image`, which has
// no registry to pull node:* from, builds this file with BASE set to the base deploy/image/base.sh
// makes, and a FROM that named an image of its own would be pulled there (and fail), or built on
// another Node than the runtime's.
describe('the base', () => {
  const dockerfile = () => readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

  it('is one ARG, the official Node image unless the build says otherwise, for every stage', () => {
    const text = dockerfile();
    expect(text.slice(0, text.search(/^FROM /m))).toMatch(/^ARG BASE=node:\d+-bookworm-slim$/m);
    const base = '$' + '{BASE}'; // the Dockerfile's own placeholder, spelt so no linter takes it for a template
    const stages: string[] = [];
    for (const [, from, name] of text.matchAll(/^FROM (\S+)(?: AS (\S+))?$/gm)) {
      const known = from === base || stages.includes(from ?? '');
      expect({ from, known }).toEqual({ from, known: true });
      if (name) stages.push(name);
    }
    expect(stages).toEqual(['deps', 'build', 'prod-deps']);
    expect(runtimeStage()).toMatch(/^FROM \$\{BASE\}$/m);
  });

  it("is made by deploy/image with the default base's Debian and Node major", () => {
    const base = /^ARG BASE=node:(\d+)-(\w+)-slim$/m.exec(dockerfile());
    const common = readFileSync(join(ROOT, 'deploy/image/common.sh'), 'utf8');
    const node = /^EBB_NODE_VERSION=\$\{EBB_NODE_VERSION:-(\d+)\.\d+\.\d+\}$/m.exec(common);
    const suite = /^EBB_DEBIAN_SUITE=\$\{EBB_DEBIAN_SUITE:-(\w+)\}$/m.exec(common);
    expect({ node: node?.[1], suite: suite?.[1] }).toEqual({ node: base?.[1], suite: base?.[2] });
  });
});

describe('the runtime image', () => {
  it('gives the node user the data directory (the inbound spool, the embedded database)', () => {
    const stage = runtimeStage();
    const dataDir = posix.join(/^WORKDIR (\S+)$/m.exec(stage)?.[1] ?? '', loadEnv({}).EBB_DATA_DIR);
    expect(dataDir).toBe('/app/.ebb');
    const made = stage.search(new RegExp(`^RUN install -d -o node -g node -m 0?700 ${dataDir}$`, 'm'));
    expect(made).toBeGreaterThan(stage.indexOf('\nCOPY --from=build '));
    expect(made).toBeLessThan(stage.indexOf('\nUSER node\n'));
  });
});

describe('docker-compose.yml', () => {
  it('builds one image, ebb:local, for every service that runs Ebb', () => {
    const { anchor, service } = compose();
    expect(anchor).toMatch(/^ {2}image: ebb:local$/m);
    expect(anchor).toMatch(/^ {2}build: \.$/m);
    for (const name of ['migrate', 'bot', 'worker']) expect(service(name)).toMatch(/^ {4}<<: \*ebb$/m);
  });

  it('gives EBB_ADMIN_TOKEN, which the bot on 0.0.0.0 needs, to the bot alone, never as a required variable', () => {
    expect(readFileSync(join(ROOT, 'deploy/config.toml'), 'utf8')).toMatch(/^host = "0\.0\.0\.0"$/m);
    const { anchor, service } = compose();
    expect(service('bot')).toMatch(/^ {6}EBB_ADMIN_TOKEN: \$\{EBB_ADMIN_TOKEN:-\}$/m);
    // Compose reads every variable of the file for every command: a required one here would stop
    // `docker compose up -d postgres redis` (the tests' services) without the bot's secret.
    expect(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8')).not.toMatch(/\$\{[A-Z_]+:\?/);
    // Only the bot gets the admin credential.
    expect(anchor).not.toContain('EBB_ADMIN_TOKEN');
    expect(service('worker')).not.toContain('EBB_ADMIN_TOKEN');
  });

  it("keeps the bot's data directory on a named volume, so a spool outlives the container", () => {
    const { service, volumes } = compose();
    expect(service('bot')).toMatch(/^ {4}volumes: \[ebb-data:\/app\/\.ebb[,\]]/m);
    expect(volumes).toMatch(/^ {2}ebb-data:$/m);
  });

  it('opens the worker to a scraper only with EBB_METRICS_TOKEN, and lets a pass finish on stop', () => {
    const { anchor, service } = compose();
    const worker = service('worker');
    expect(anchor).toMatch(/^ {4}EBB_METRICS_TOKEN: \$\{EBB_METRICS_TOKEN:-\}$/m);
    // Set only when the token is: a worker on 0.0.0.0 without one would refuse to start, and loop.
    expect(worker).toMatch(/^ {6}EBB_METRICS_HOST: "?\$\{EBB_METRICS_TOKEN:\+0\.0\.0\.0\}"?$/m);
    // Above the 30 s the worker waits for its passes in hand (run-worker.ts, close).
    const grace = /^ {4}stop_grace_period: (\d+)s$/m.exec(worker)?.[1];
    expect(Number(grace)).toBeGreaterThan(30);
  });
});
