/**
 * docker-compose.yml, parsed: valid against the Compose Specification's JSON schema (the copy the
 * `dclint` package ships, which follows compose-spec; no Docker engine runs here to ask), and what it
 * promises an operator: the config mounted from the host, the web and Events API ports published,
 * Postgres and Redis kept off the host's ports, every variable it reads listed in `.env.example`, a
 * health check on every long-running service, and workers that `--scale worker=N` can multiply.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENV_NAMES, loadConfig } from '@ebb/config';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
const COMPOSE_TEXT = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');

interface Service {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  healthcheck?: { test: string[] };
  restart?: string;
  container_name?: string;
  depends_on?: Record<string, { condition: string }>;
}
interface ComposeFile {
  services: Record<string, Service>;
}

/** Compose reads YAML 1.1 merge keys (`<<: *ebb`); so does this. */
function parseCompose(text: string): ComposeFile {
  return parse(text, { merge: true }) as ComposeFile;
}

function composeValidator() {
  const require = createRequire(import.meta.url);
  const schemaFile = join(require.resolve('dclint/package.json'), '..', 'schemas', 'compose.schema.json');
  const schema = JSON.parse(readFileSync(schemaFile, 'utf8')) as { $schema: string };
  // The schema is draft-07 and names its meta-schema without the trailing `#` Ajv registers it under.
  const ajv = new Ajv({ allErrors: true, allowUnionTypes: true, strictTypes: false });
  ajv.addMetaSchema({ ...require('ajv/dist/refs/json-schema-draft-07.json'), $id: schema.$schema });
  const validate = ajv.compile(schema);
  return (document: unknown): string[] =>
    validate(document)
      ? []
      : (validate.errors ?? []).map(
          (e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`,
        );
}

/** `.env.example`: the variables set on a line of their own, and those only shown in a comment. */
function envExample() {
  const lines = readFileSync(join(ROOT, '.env.example'), 'utf8').split('\n');
  const active = new Map<string, string>();
  const documented = new Set<string>();
  for (const line of lines) {
    const set = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (set?.[1] !== undefined) active.set(set[1], set[2] ?? '');
    const shown = /^# ([A-Z][A-Z0-9_]*)=/.exec(line);
    if (shown?.[1] !== undefined) documented.add(shown[1]);
  }
  return { active, documented };
}

/** The container port of a `HOST:CONTAINER` (or `IP:HOST:CONTAINER`) short-syntax port. */
function containerPort(port: string): number {
  return Number(
    port
      .split(':')
      .at(-1)
      ?.replace(/\/(tcp|udp)$/, ''),
  );
}

/** The services that run the Ebb image: everything but Postgres and Redis. */
function ebbServices(compose: ComposeFile): [string, Service][] {
  return Object.entries(compose.services).filter(([, s]) => s.image === 'ebb:local');
}

const compose = parseCompose(COMPOSE_TEXT);
const validate = composeValidator();

describe('docker-compose.yml against the Compose Specification', () => {
  it('is valid', () => {
    expect(validate(compose)).toEqual([]);
  });

  it('is checked by a schema that refuses a misspelt key', () => {
    const typo = structuredClone(compose) as unknown as { services: Record<string, Record<string, unknown>> };
    typo.services.bot = { ...typo.services.bot, healtcheck: typo.services.bot?.healthcheck };
    expect(validate(typo).join('\n')).toMatch(/additionalProperty.*healtcheck/);
  });
});

describe('docker-compose.yml', () => {
  it('publishes no port of Postgres or Redis on the host, and no port but the bot’s', () => {
    const publishing = Object.entries(compose.services)
      .filter(([, s]) => (s.ports ?? []).length > 0)
      .map(([name]) => name);
    expect(publishing).toEqual(['bot']);
  });

  it('publishes the web channel’s port and the Events API’s ([web] port + 1) of the bot’s config', async () => {
    const bot = compose.services.bot;
    const config = await loadConfig({ path: join(ROOT, 'deploy/config.toml') });
    const published = (bot?.ports ?? []).map(containerPort).sort();
    expect(published).toEqual([config.web.port, config.web.port + 1]);
    // The bot's own health check asks that port.
    expect(bot?.healthcheck?.test.join(' ')).toContain(`http://127.0.0.1:${config.web.port}/healthz`);
  });

  it('mounts the folder of EBB_CONFIG from ./deploy, read-only, into every service that runs Ebb', () => {
    const services = ebbServices(compose);
    expect(services.map(([name]) => name).sort()).toEqual(['bot', 'migrate', 'worker']);
    for (const [name, service] of services) {
      const configFile = service.environment?.EBB_CONFIG ?? '';
      // The folder, not the file: the config watcher watches the folder, and a single-file bind mount
      // keeps the old inode when an editor replaces the file.
      const mount = `./deploy:${posix.dirname(configFile)}:ro`;
      expect({ name, volumes: service.volumes }).toEqual({ name, volumes: expect.arrayContaining([mount]) });
    }
    // …and the file it names is there on the host.
    const configFile = compose.services.bot?.environment?.EBB_CONFIG ?? '';
    expect(readFileSync(join(ROOT, 'deploy', posix.basename(configFile)), 'utf8')).toMatch(/^\[web\]$/m);
  });

  it("keeps the bot's data directory on a named volume, so a spool outlives the container", () => {
    expect(compose.services.bot?.volumes).toContain('ebb-data:/app/.ebb');
    expect(parse(COMPOSE_TEXT).volumes).toHaveProperty('ebb-data');
  });

  it('gives every long-running service a health check, and the one-shot migration is waited for', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      if (service.restart === 'no') {
        // A one-shot: what the others wait for is its exit, not a probe.
        const waiters = Object.values(compose.services).filter(
          (s) => s.depends_on?.[name]?.condition === 'service_completed_successfully',
        );
        expect({ name, waiters: waiters.length }).toEqual({ name, waiters: 2 });
      } else {
        expect({ name, healthcheck: service.healthcheck?.test.length }).toEqual({
          name,
          healthcheck: expect.any(Number),
        });
      }
    }
    const worker = compose.services.worker;
    expect(worker?.healthcheck?.test.join(' ')).toContain(
      `http://127.0.0.1:${worker?.environment?.EBB_METRICS_PORT}/healthz`,
    );
  });

  it('lets `--scale worker=N` run several workers: no container name, no host port', () => {
    const worker = compose.services.worker;
    expect(worker?.container_name).toBeUndefined();
    expect(worker?.ports).toBeUndefined();
  });
});

describe('.env.example', () => {
  const { active, documented } = envExample();
  const used = new Set([...COMPOSE_TEXT.matchAll(/\$\{([A-Z][A-Z0-9_]*)/g)].map((m) => m[1]));

  it('sets every variable docker-compose.yml reads, and only those (others in .env would do nothing)', () => {
    expect(used.size).toBeGreaterThan(5);
    expect([...active.keys()].sort()).toEqual([...used].sort());
  });

  it('names every variable Ebb reads, the ones compose sets itself in comments', () => {
    for (const name of ENV_NAMES) {
      expect({ name, listed: active.has(name) || documented.has(name) }).toEqual({ name, listed: true });
    }
    for (const name of documented) expect(ENV_NAMES).toContain(name);
  });

  it('leaves every secret empty', () => {
    const secrets = [...active].filter(([name]) => /TOKEN|KEY|SECRET/.test(name));
    expect(secrets.length).toBeGreaterThanOrEqual(7);
    for (const [name, value] of secrets) expect({ name, value }).toEqual({ name, value: '' });
  });
});

describe('the host-ports override shown at the top of docker-compose.yml', () => {
  const header = COMPOSE_TEXT.slice(0, COMPOSE_TEXT.indexOf('\nx-ebb:'));
  const snippet = header.slice(header.indexOf('docker-compose.override.yml beside this file'));
  const yamlText = [...snippet.matchAll(/^# {3}(.*)$/gm)].map((m) => m[1]).join('\n');
  const override = parseCompose(yamlText);

  it('is a valid compose file that publishes Postgres and Redis on loopback only, where the tests look', () => {
    expect(validate(override)).toEqual([]);
    expect(override.services.postgres?.ports).toEqual(['127.0.0.1:5432:5432']);
    expect(override.services.redis?.ports).toEqual(['127.0.0.1:6379:6379']);
  });
});
